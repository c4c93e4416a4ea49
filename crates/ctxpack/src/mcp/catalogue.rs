//! The catalogue: every tool's name, title, effect, input schema, handler and what a model
//! reads about it. The list is sent with every conversation, so each description says in a
//! sentence or two when to call the tool and what its result costs, and each argument's text
//! is a phrase: the library's longer documentation of the same fields is for programmers.

use ctxpack_api::docs::{
    DocumentPackRequest, FieldRequest, ImportRequest, InsertRequest, VsearchRequest,
};
use ctxpack_api::{ArtifactAddRequest, IndexRequest, QueryRequest};
use rmcp::model::Tool;

use crate::mcp::Scope;
use crate::mcp::schema::{merged, schema_of};
use crate::mcp::tools::{
    Content, Documents, Effect, Handler, Host, NoArguments, Presentation, SnapshotPackRequest,
    Spec, StorePath, artifact_add, context_pack, docs_import, docs_insert, index, query,
    repo_context_pack, status, vsearch, vsync,
};

const CATALOGUE: &[Spec] = &[
    Spec {
        name: "repo_context_pack",
        title: "Context pack from the repository",
        effect: Effect::Read,
        schema: merged::<SnapshotPackRequest, Presentation>,
        handler: Handler::Reply(repo_context_pack),
        description: "The best evidence from this git repository for a goal, within a hard token budget: code and docs, each cited `path#Lstart-Lend@sha`, and what was left out. Call it first when you need to understand or change code, instead of opening files one by one. Packs the committed snapshot (HEAD by default; a new commit is indexed first); at most `budget` ({pack_budget}) tokens.",
        arguments: &[
            ("goal", "What you are about to do or find out."),
            ("budget", "Tokens the whole result may take."),
            ("at", "HEAD, a full SHA or a unique prefix."),
            ("scope", "Also merge stored artifacts of this scope."),
            ("index", "Index the commit first when it is not."),
            ("include", "Only paths matching these globs."),
            ("exclude", "Leave out paths matching these globs."),
            ("worktree", "Also pack uncommitted changes."),
            (
                "session",
                "Hits the session was shown come back as references. Null: this MCP session.",
            ),
            ("fresh", "Show even what the session was shown."),
            (
                "recall",
                "Show again: citations or pack ids the session was shown.",
            ),
            ("format", "The text's format."),
            ("view", "How much each hit carries."),
        ],
        withheld: &["meter", "selector", "top_k", "budget_covers"],
        local_only: &[(
            "worktree",
            "a team server packs committed snapshots only: pack your working tree with a local `ctxpack pack --worktree`",
        )],
    },
    Spec {
        name: "query",
        title: "Raw retrieval hits",
        effect: Effect::Read,
        schema: schema_of::<QueryRequest>,
        handler: Handler::Json(query),
        description: "Raw ranking of the repository's chunks for a goal: citations, costs and score breakdowns, no text. Call it to see why something ranks where it does; for context, call `repo_context_pack`. About 100 tokens per hit ({query_top_k} by default).",
        arguments: &[
            ("goal", "What you are looking for."),
            ("at", "HEAD, a full SHA or a unique prefix."),
            ("top_k", "How many hits."),
        ],
        withheld: &["meter"],
        local_only: &[],
    },
    Spec {
        name: "status",
        title: "Store and HEAD status",
        effect: Effect::Read,
        schema: schema_of::<NoArguments>,
        handler: Handler::Json(status),
        description: "HEAD's commit and whether it is indexed, uncommitted changes, and the indexed snapshots. Call it when unsure what the store holds.",
        arguments: &[],
        withheld: &[],
        local_only: &[],
    },
    Spec {
        name: "artifact_add",
        title: "Store an artifact",
        effect: Effect::IdempotentWrite,
        schema: merged::<ArtifactAddRequest, Content>,
        handler: Handler::Json(artifact_add),
        description: "Store text evidence that is not committed code (a CI log, test output, notes): `repo_context_pack` calls with a matching `scope` rank it with the code, cited `evidence:<id>#Lx-Ly` or `artifact:<id>#Lx-Ly`. The same content under the same id is a no-op; other content under a used id is a conflict.",
        arguments: &[],
        withheld: &[],
        local_only: &[],
    },
    Spec {
        name: "index",
        title: "Index a commit",
        effect: Effect::IdempotentWrite,
        schema: schema_of::<IndexRequest>,
        handler: Handler::Json(index),
        description: "Index a commit (HEAD by default), incrementally; `repo_context_pack` indexes the commit it packs by itself, so call this only to index ahead. Reads the commit, never the worktree. About 60 tokens of counts.",
        arguments: &[],
        withheld: &[],
        local_only: &[],
    },
    Spec {
        name: "context_pack",
        title: "Context pack from documents",
        effect: Effect::Read,
        schema: merged::<DocumentPackRequest, StorePath>,
        handler: Handler::Json(context_pack),
        description: "A budgeted, cited pack from a JSON document collection of a ctxpack store: the documents whose `field` is most similar to `query`, best first, within `budget` ({docs_budget} {docs_meter} by default) plus about 30 tokens per chunk. Call it to ground an answer in stored documents, citing each chunk's `id`; not for source code.",
        arguments: &[
            (
                "path",
                "The store: a directory inside the repository, or a server's store name.",
            ),
            ("collection", "The collection."),
            (
                "field",
                "The string field to rank and pack (a dotted path).",
            ),
            ("query", "What to rank against."),
            ("budget", "The budget of the chunks' text."),
            (
                "filter",
                "A MongoDB-style filter applied first, as its JSON text.",
            ),
        ],
        withheld: &["meter", "selector", "top_k"],
        local_only: &[],
    },
    Spec {
        name: "vsearch",
        title: "Vector search over documents",
        effect: Effect::Read,
        schema: merged::<VsearchRequest, StorePath>,
        handler: Handler::Json(vsearch),
        description: "The `k` documents of a collection most similar to `query` (cosine over `field`), whole, with ids and scores; `filter` narrows first. No budget: the result grows with the documents; for a budget, call `context_pack`.",
        arguments: &[
            (
                "path",
                "The store: a directory inside the repository, or a server's store name.",
            ),
            ("collection", "The collection."),
            ("field", "The string field to compare (a dotted path)."),
            ("query", "What to compare with."),
            ("k", "How many documents."),
            (
                "filter",
                "A MongoDB-style filter applied first, as its JSON text.",
            ),
        ],
        withheld: &["exact"],
        local_only: &[],
    },
    Spec {
        name: "docs_insert",
        title: "Insert a document",
        effect: Effect::Overwrite,
        schema: merged::<InsertRequest, StorePath>,
        handler: Handler::Json(docs_insert),
        description: "Insert one JSON document into a collection (created on first insert) and return its `_id`; a duplicate `_id` is a conflict unless `replace` is true. For many documents, call `docs_import`; then `vsync`.",
        arguments: &[],
        withheld: &[],
        local_only: &[],
    },
    Spec {
        name: "docs_import",
        title: "Import documents",
        effect: Effect::Write,
        schema: merged::<ImportRequest, Documents>,
        handler: Handler::Json(docs_import),
        description: "Import many JSON documents into a collection, from exactly one of `documents`, `jsonl` or `file` (a JSON Lines file in the repository, which keeps a large set out of your output). A bad line or duplicate `_id` writes nothing and names the line. Call `vsync` afterwards.",
        arguments: &[],
        withheld: &[],
        local_only: &[(
            "file",
            "a team server imports documents from the request only: give `documents` or `jsonl`",
        )],
    },
    Spec {
        name: "vsync",
        title: "Store embeddings",
        effect: Effect::IdempotentWrite,
        schema: merged::<FieldRequest, StorePath>,
        handler: Handler::Json(vsync),
        description: "Store the missing and stale embeddings of a collection's string field and remove those of deleted documents, so searches need not embed on the fly. Call it after inserts or imports, before many searches.",
        arguments: &[],
        withheld: &[],
        local_only: &[],
    },
];

/// The tools a server on `host` at `scope` lists, in catalogue order.
pub(crate) fn list(scope: Scope, host: Host) -> Vec<Tool> {
    CATALOGUE
        .iter()
        .filter(|spec| spec.scope() <= scope)
        .map(|spec| spec.tool(host))
        .collect()
}

/// The tool called `name`.
pub(crate) fn lookup(name: &str) -> Option<&'static Spec> {
    CATALOGUE.iter().find(|spec| spec.name == name)
}
