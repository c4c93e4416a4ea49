//! The catalogue: every tool's name, title, effect, schemas, handler and the description a
//! model reads. Each description says when to call the tool and what a call costs: the tokens
//! its result takes in the model's context, whether it writes, and whether it indexes.

use ctxpack_api::docs::{
    DocumentPackRequest, FieldRequest, ImportRequest, InsertRequest, VsearchRequest,
};
use ctxpack_api::{ArtifactAddRequest, IndexRequest, QueryRequest};
use rmcp::model::Tool;

use crate::mcp::Scope;
use crate::mcp::pack_output;
use crate::mcp::schema::{merged, schema_of};
use crate::mcp::tools::{
    Content, Documents, Effect, Handler, NoArguments, Presentation, SnapshotPackRequest, Spec,
    StorePath, artifact_add, context_pack, docs_import, docs_insert, index, query,
    repo_context_pack, status, vsearch, vsync,
};

const CATALOGUE: &[Spec] = &[
    Spec {
        name: "repo_context_pack",
        title: "Context pack from the repository",
        effect: Effect::Read,
        schema: merged::<SnapshotPackRequest, Presentation>,
        output: Some(pack_output::schema),
        handler: Handler::Reply(repo_context_pack),
        description: "The best evidence from this git repository for a task, inside a hard budget: the most relevant code and documentation chunks, each cited as `path#Lstart-Lend@sha`, never more than the budget, with counters and a list of what was left out and why.\n\n\
When: first, whenever you need to understand or change code for a goal (\"how are budgets enforced\", \"add retry to the HTTP client\"), instead of opening files one by one. It reads the exact committed snapshot (`at`, HEAD by default), not uncommitted changes unless `worktree` asks for them (the pack warns when it leaves changes out). Not for JSON document collections (`context_pack`) nor for ranking diagnostics (`query`).\n\n\
Cost: about `budget` units of `meter` ({pack_budget} {pack_meter} by default) of your context: the chunks never cost more than the budget, and the Markdown around them (a citation heading and a fence per hit, a short header) is small; `format` json costs about twice the tokens for the same pack. The structured content is always the canonical JSON pack, what `ctxpack pack --format json` prints. Indexes: a commit not indexed yet is indexed first unless `index` is false (incremental; seconds for a large repository the first time, a fraction of a second after a commit, with progress when the call carries a progress token). Writes: at read scope nothing but that index (a cache of the repository); at write scope the pack is also appended to the store's ledger.",
    },
    Spec {
        name: "query",
        title: "Raw retrieval hits",
        effect: Effect::Read,
        schema: schema_of::<QueryRequest>,
        output: None,
        handler: Handler::Json(query),
        description: "Raw retrieval hits of the repository's committed snapshot for a goal, best first, with each score's breakdown (BM25 over text, path and symbol, the file's evidence, and the prior that halves tests and fixtures) and each hit's cost. No budget is applied and no text is returned.\n\n\
When: to see why something ranks where it does, or which files look relevant before asking for a pack; for context to read, call `repo_context_pack`.\n\n\
Cost: about 100 tokens per hit ({query_top_k} hits by default, `top_k`), no file text. Writes: nothing. Indexes: never (an unindexed commit fails with `not_found`, exitCode 3). Returns what `ctxpack query --format json` prints.",
    },
    Spec {
        name: "status",
        title: "Store and HEAD status",
        effect: Effect::Read,
        schema: schema_of::<NoArguments>,
        output: None,
        handler: Handler::Json(status),
        description: "What the server's store holds: HEAD's commit and branch, whether HEAD is indexed, whether the worktree has uncommitted changes, and every indexed snapshot with its file and chunk counts.\n\n\
When: unsure whether a commit is indexed, or after `repo_context_pack` failed with `not_found`. Takes no arguments.\n\n\
Cost: about 100 tokens, plus about 40 per indexed snapshot. Writes: nothing. Indexes: never. Returns what `ctxpack status --format json` prints.",
    },
    Spec {
        name: "artifact_add",
        title: "Store an artifact",
        effect: Effect::IdempotentWrite,
        schema: merged::<ArtifactAddRequest, Content>,
        output: None,
        handler: Handler::Json(artifact_add),
        description: "Store text evidence beside the repository's snapshots: a CI log, test output, session notes. Later `repo_context_pack` calls with `scope` session, harness, evidence or all merge the artifacts of that scope into their candidates, ranked and budgeted like code and cited as `evidence:<id>#Lx-Ly` (evidence) or `artifact:<id>#Lx-Ly` (session, harness).\n\n\
When: the answer depends on something that is not committed code, such as a failing test's output. Not for code (commit and `index` it) nor for JSON documents (`docs_insert`).\n\n\
Cost: the result is about 20 tokens, `{\"id\", \"scope\"}`; the content you send counts against your own output. Writes: the artifact (chunked, secrets masked) into the store; the same content under the same id again is a no-op, other content under a used id fails with `conflict` (exitCode 5). Indexes: only the artifact, never a commit.",
    },
    Spec {
        name: "index",
        title: "Index a commit",
        effect: Effect::IdempotentWrite,
        schema: schema_of::<IndexRequest>,
        output: None,
        handler: Handler::Json(index),
        description: "Index a commit of the repository (HEAD by default) into the store, so that `repo_context_pack` and `query` can read it. Incremental and content-addressed: a commit already indexed is a no-op, and a child commit only processes the files it changed. It reads the commit, never the worktree: commit first to include changes.\n\n\
When: after `repo_context_pack` or `query` failed because the snapshot is not indexed, or after new commits.\n\n\
Cost: the result is about 60 tokens of counts; the work takes seconds for a large repository the first time and a fraction of a second for a small change (progress is reported when the call carries a progress token; cancelling the call stops the work and commits nothing). Writes: the store (creating it if needed); fails with `not_found` (exitCode 3) while another process is writing it. Returns what `ctxpack index --format json` prints.",
    },
    Spec {
        name: "context_pack",
        title: "Context pack from documents",
        effect: Effect::Read,
        schema: merged::<DocumentPackRequest, StorePath>,
        output: None,
        handler: Handler::Json(context_pack),
        description: "A token-budgeted, cited context pack from a JSON document collection of a ctxpack store: the documents whose string `field` is most similar to `query` (offline hashing embedder, cosine similarity), packed best-first until the budget would overflow; packing stops at the first chunk that does not fit and the pack is then `truncated`.\n\n\
When: to ground an answer in stored documents; cite each chunk by its `id`. Add `filter` to restrict candidates first (hybrid retrieval). Not for the repository's source code (`repo_context_pack`).\n\n\
Cost: the chunks' text is at most `budget` units of `meter` ({docs_budget} {docs_meter} by default, where approx is ceil(chars / 4)), plus about 30 tokens of JSON per chunk. Writes: nothing (documents not yet embedded by `vsync` are embedded on the fly, in memory). Indexes: never. Returns {query, budgetTokens, usedTokens, truncated, chunks: [{id, score, tokens, text}], citations}, exactly what `ctxpack docs context` prints.",
    },
    Spec {
        name: "vsearch",
        title: "Vector search over documents",
        effect: Effect::Read,
        schema: merged::<VsearchRequest, StorePath>,
        output: None,
        handler: Handler::Json(vsearch),
        description: "Exact cosine k-nearest-neighbour search over a string field of a document collection: the `k` documents most similar to `query`, best first, each whole with its `_id` and score; `filter` restricts candidates first.\n\n\
When: you need whole documents or their ids; for context inside a budget, call `context_pack`.\n\n\
Cost: no budget applies: each of the `k` documents is returned whole, so the result grows with their size. Writes: nothing (documents not yet embedded by `vsync` are embedded on the fly, in memory). Indexes: never. Returns {hits: [{id, score, document}], embeddedOnTheFly}.",
    },
    Spec {
        name: "docs_insert",
        title: "Insert a document",
        effect: Effect::Overwrite,
        schema: merged::<InsertRequest, StorePath>,
        output: None,
        handler: Handler::Json(docs_insert),
        description: "Insert one JSON document into a collection of an existing ctxpack store (the collection is created on first insert) and return its `_id`; an ObjectId is generated when the document has none. A duplicate `_id` fails with `conflict` (exitCode 5) unless `replace` is true, which overwrites the stored document.\n\n\
When: to store one document for later `context_pack` or `vsearch` calls; for many, call `docs_import`.\n\n\
Cost: the result is about 20 tokens. Writes: the document (and, with `replace`, over the stored one). Indexes: no embedding is stored until `vsync`; searches embed the document on the fly until then.",
    },
    Spec {
        name: "docs_import",
        title: "Import documents",
        effect: Effect::Write,
        schema: merged::<ImportRequest, Documents>,
        output: None,
        handler: Handler::Json(docs_import),
        description: "Import many JSON documents into a collection of an existing ctxpack store, given as exactly one of `documents` (an array of objects), `jsonl` (JSON Lines text) or `file` (a JSON Lines file inside the repository). The whole input is checked first, so a bad line or a duplicate `_id` writes nothing and the error names the line; then documents are written a batch at a time.\n\n\
When: to load a data set; `file` keeps a large one out of your output.\n\n\
Cost: the result is about 20 tokens, {collection, imported, batches}. Writes: every document, each time it is called. Indexes: no embeddings: call `vsync` afterwards so searches need not embed them on the fly.",
    },
    Spec {
        name: "vsync",
        title: "Store embeddings",
        effect: Effect::IdempotentWrite,
        schema: merged::<FieldRequest, StorePath>,
        output: None,
        handler: Handler::Json(vsync),
        description: "Compute and store the missing and stale embeddings of a collection's string field (after inserts, imports or replacements) and remove those of deleted documents, so `vsearch` and `context_pack` read stored vectors instead of embedding on the fly.\n\n\
When: after `docs_insert` or `docs_import`, before many searches.\n\n\
Cost: the result is about 40 tokens of counts; the work is proportional to the documents that changed. Writes: the embeddings; repeating it changes nothing. Returns the counts, as `ctxpack docs vsync --format json` prints them.",
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
