//! Masking on every surface: no pack, search result or ledger record shows a secret, whatever
//! carried it in — a goal, a document, an artifact's title, a candidate given to `select`, a
//! plan's purpose. Documents themselves are stored verbatim: `find` returns what was inserted.

use ctxpack_api::docs::{DocumentPackRequest, FindRequest, InsertRequest, VsearchRequest};
use ctxpack_api::plan::{PlanRunRequest, PlanSource};
use ctxpack_api::{
    Access, ArtifactAddRequest, ArtifactScope, Control, ErrorKind, Format, IndexRequest,
    PackOptions, PackScope, RenderOptions, SelectRequest, SnapshotPackRequest, View, Workspace,
    pack_json, select,
};
use serde_json::json;

use crate::api::fixture::{Workspaces, project, rewrite_chunk};

/// A secret with a real token's shape.
const TOKEN: &str = "ghp_FAKEfakeFAKEfake0123456789abcdefABCD";

/// Every file below `dir`, as text.
fn everything_in(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.push_str(&everything_in(&path));
        } else {
            out.push_str(&String::from_utf8_lossy(
                &std::fs::read(&path).unwrap_or_default(),
            ));
        }
    }
    out
}

#[test]
fn no_surface_shows_a_secret() {
    let (f, _) = project();
    let workspace = f.workspace();
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes");
    let record = RenderOptions {
        format: Format::Json,
        ..RenderOptions::default()
    };
    let mut shown = Vec::new();

    // An artifact whose title and text carry the token, merged into a pack whose goal does.
    workspace
        .add_artifact(
            &ArtifactAddRequest {
                title: Some(format!("log with {TOKEN}")),
                ..ArtifactAddRequest::new(ArtifactScope::Evidence)
            },
            format!("deploy failed: GITHUB_TOKEN={TOKEN}\nbudget exceeded\n").as_bytes(),
        )
        .expect("stored");
    let built = workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: format!("why did deploy with {TOKEN} fail the budget"),
                scope: PackScope::All,
                ..SnapshotPackRequest::default()
            },
            &PackOptions {
                record: Some(&record),
                index_if_missing: false,
                rendering: None,
            },
        )
        .expect("packs");
    assert!(built.pack.redactions.total() > 0);
    shown.push(pack_json(&built.pack, View::Full).to_string());
    for artifact in workspace.artifacts(None).expect("listed") {
        shown.push(format!("{artifact:?}"));
    }

    // Candidates given to `select`.
    let input = json!([{"id": "a", "text": format!("token = \"{TOKEN}\"")}]).to_string();
    let pack = select(
        &SelectRequest {
            goal: format!("find {TOKEN}"),
            ..SelectRequest::default()
        },
        input.as_bytes(),
    )
    .expect("selects");
    shown.push(pack_json(&pack, View::Full).to_string());

    // Documents: stored verbatim, masked in searches and packs.
    let store =
        Workspace::for_store(&f.path().join("app.ctxpack"), Access::ReadWrite).expect("a store");
    store.create_store(false).expect("created");
    let document = json!({"_id": 1, "text": format!("the deploy key is {TOKEN}"), "meta": {"auth": format!("Bearer {TOKEN}")}});
    store
        .insert_document(&InsertRequest {
            collection: "docs".into(),
            document: document.clone(),
            replace: false,
            wait: false,
        })
        .expect("inserted");
    let mut found = Vec::new();
    store
        .find_documents(
            &FindRequest {
                collection: "docs".into(),
                ..FindRequest::default()
            },
            &mut |body| found.push(body.to_owned()),
        )
        .expect("found");
    assert_eq!(
        found,
        [document.to_string()],
        "find returns what was inserted"
    );
    let hits = store
        .vsearch(&VsearchRequest {
            collection: "docs".into(),
            field: "text".into(),
            query: format!("deploy key {TOKEN}"),
            ..VsearchRequest::default()
        })
        .expect("searches");
    assert_eq!(hits.hits.len(), 1);
    shown.push(hits.to_json_line());
    let pack = store
        .document_pack(
            &DocumentPackRequest {
                collection: "docs".into(),
                field: "text".into(),
                query: format!("deploy key {TOKEN}"),
                ..DocumentPackRequest::default()
            },
            Some(&record),
        )
        .expect("packs");
    shown.push(pack.pack.to_json_line());
    shown.push(pack_json(&pack.pack.pack, View::Full).to_string());

    // A plan's purpose.
    let plan = format!(
        "flow f\n  t = text(\"budget notes\")\n  ctx c\n    purpose \"debug with {TOKEN}\"\n    budget 100\n    include t\n  emit c\n"
    );
    let ran = workspace
        .run_plan(
            &PlanSource {
                text: &plan,
                name: "plan.ctx",
            },
            &PlanRunRequest::default(),
            Some(&record),
        )
        .expect("runs");
    shown.push(ran.render(&record, true));

    for text in &shown {
        assert!(!text.contains(TOKEN), "a secret is shown: {text}");
    }
    for store in [f.store(), f.path().join("app.ctxpack")] {
        let ledger = everything_in(&store.join("ledger"));
        assert!(!ledger.is_empty(), "{} recorded packs", store.display());
        assert!(
            !ledger.contains(TOKEN),
            "a secret is in the ledger of {}",
            store.display()
        );
    }
}

/// A pack's redaction count is what its hits show: a chunk cut to the lines that match the
/// goal leaves its masked secret out and counts it among the candidates' only; the same chunk
/// shown whole counts it.
#[test]
fn a_pack_counts_the_masks_its_hits_show() {
    let mut body = format!("pub fn deploy() -> u32 {{\n    let token = \"{TOKEN}\";\n");
    for i in 0..30 {
        body.push_str(&format!("    let step_{i} = {i}; // unrelated setup\n"));
    }
    body.push_str("    // The quota ledger admits each deploy once.\n    let quota_ledger = 1;\n    quota_ledger\n}\n");
    let (_f, workspace) = indexed_deploy(&body);
    let pack = |budget: u64| {
        workspace
            .snapshot_pack(
                &SnapshotPackRequest {
                    goal: "quota ledger".into(),
                    budget: ctxpack_api::Budget::new(budget).expect("a budget"),
                    ..SnapshotPackRequest::default()
                },
                &PackOptions::default(),
            )
            .expect("packs")
            .pack
    };
    let cut = pack(400);
    assert_eq!(cut.hits.len(), 1, "{:?}", cut.hits);
    assert!(
        !cut.hits[0].candidate.text.contains("[REDACTED:"),
        "{}",
        cut.hits[0].candidate.text
    );
    assert_eq!(cut.redactions.total(), 0);
    assert_eq!(cut.candidate_redactions.total(), 1);
    let whole = pack(8000);
    assert!(
        whole.hits[0]
            .candidate
            .text
            .contains("[REDACTED:github_token]")
    );
    assert_eq!(whole.redactions.total(), 1);
    assert_eq!(whole.candidate_redactions.total(), 1);
}

/// A repository of one commit holding `src/deploy.rs`, indexed.
fn indexed_deploy(body: &str) -> (ctxpack_testkit::Fixture, Workspace) {
    let repo = ctxpack_testkit::Script::new()
        .write("src/deploy.rs", body)
        .commit("deploy")
        .build();
    let f = repo.checkout();
    let workspace = f.workspace();
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes");
    (f, workspace)
}

/// Stored text is masked again when a pack shows it unless today's rules masked it: a store
/// whose files were chunked under older rules (here one whose text still holds a token those
/// rules let through) gets today's masking at pack time, and the pack counts it.
#[test]
fn text_stored_under_older_rules_is_masked_by_todays() {
    let body = "pub fn deploy() -> u32 {\n    // The quota ledger admits each deploy once.\n    let quota_ledger = 1;\n    quota_ledger\n}\n";
    let (f, workspace) = indexed_deploy(body);
    // As an older rule set would have stored it: the token unmasked (with a checksum that
    // matches), under the previous rules' version.
    rewrite_chunk(&f, "src/deploy.rs", |text| {
        text.replace(
            "let quota_ledger = 1;",
            &format!("let quota_ledger = 1; // {TOKEN}"),
        )
    });
    let conn = rusqlite::Connection::open(f.store().join("ctxpack.sqlite")).expect("open");
    conn.execute("UPDATE files SET chunker = chunker - 1", [])
        .expect("an older rule set's version");
    drop(conn);
    let pack = workspace
        .snapshot_pack(
            &SnapshotPackRequest {
                goal: "quota ledger".into(),
                ..SnapshotPackRequest::default()
            },
            &PackOptions::default(),
        )
        .expect("packs")
        .pack;
    let shown: String = pack
        .hits
        .iter()
        .map(|h| h.candidate.text.as_str())
        .collect();
    assert!(shown.contains("quota_ledger"), "{shown}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("[REDACTED:github_token]"), "{shown}");
    assert_eq!(pack.redactions.total(), 1);
}

/// One entry of the secrets corpus (`crates/ctxpack-core/tests/secrets/`).
#[derive(serde::Deserialize)]
struct Entry {
    id: String,
    kind: Option<String>,
    text: String,
    secret: Option<String>,
    file: String,
}

/// Both files of the secrets corpus: the entries the rules were written against and the ones
/// held out from them.
fn corpus() -> Vec<Entry> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ctxpack-core/tests/secrets");
    ["corpus.jsonl", "heldout.jsonl"]
        .iter()
        .flat_map(|name| {
            let text = std::fs::read_to_string(dir.join(name)).expect("the corpus");
            text.lines()
                .filter(|line| !line.trim().is_empty())
                .map(|line| serde_json::from_str::<Entry>(line).expect("an entry"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The secrets corpus through the two ways text gets in: as files of a repository, indexed and
/// read back as a pack would show them, and as documents, imported and packed with
/// `docs context`. No positive's secret is shown, and no negative is changed.
#[test]
fn the_secrets_corpus_is_masked_in_repositories_and_documents() {
    let entries = corpus();
    assert!(entries.len() > 300, "{} entries", entries.len());
    let mut script = ctxpack_testkit::Script::new();
    for entry in &entries {
        script.write(&format!("corpus/{}/{}", entry.id, entry.file), &entry.text);
    }
    script.commit("the corpus");
    let f = script.build().checkout();
    let workspace = f.workspace();
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes");
    let store =
        Workspace::for_store(&f.path().join("docs.ctxpack"), Access::ReadWrite).expect("a store");
    store.create_store(false).expect("created");
    for entry in &entries {
        store
            .insert_document(&InsertRequest {
                collection: "corpus".into(),
                document: json!({"_id": entry.id, "entry": entry.id, "text": entry.text}),
                replace: false,
                wait: false,
            })
            .expect("inserted");
    }
    let mut failures = Vec::new();
    let (mut in_repository, mut in_documents) = (0, 0);
    for entry in &entries {
        let path = format!("corpus/{}/{}", entry.id, entry.file);
        // A file the snapshot leaves out (a lockfile, say) or skips is never shown; a chunked
        // one is shown as stored.
        let stored = match workspace.indexed_file("HEAD", &path) {
            Ok(file) if file.skipped.is_none() => {
                let lines: Vec<&str> = file.lines.iter().flatten().map(String::as_str).collect();
                Some(lines.join("\n"))
            }
            Ok(_) => None,
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => panic!("{path}: {e}"),
        };
        let pack = store
            .document_pack(
                &DocumentPackRequest {
                    collection: "corpus".into(),
                    field: "text".into(),
                    query: entry.text.clone(),
                    filter: Some(json!({"entry": entry.id})),
                    budget: ctxpack_api::Budget::new(20_000).expect("a budget"),
                    ..DocumentPackRequest::default()
                },
                None,
            )
            .expect("packs");
        let shown = pack_json(&pack.pack.pack, View::Full).to_string();
        in_repository += usize::from(stored.is_some());
        in_documents += usize::from(!pack.pack.pack.hits.is_empty());
        match (&entry.kind, &entry.secret) {
            (Some(_), Some(secret)) => {
                if stored
                    .as_deref()
                    .is_some_and(|s| s.contains(secret.as_str()))
                {
                    failures.push(format!("{}: shown in the repository", entry.id));
                }
                let escaped = serde_json::to_string(secret).expect("a string");
                if shown.contains(&escaped[1..escaped.len() - 1]) {
                    failures.push(format!("{}: shown in a document pack", entry.id));
                }
            }
            _ => {
                if stored
                    .as_deref()
                    .is_some_and(|s| s != entry.text.trim_end_matches('\n'))
                {
                    failures.push(format!(
                        "{}: a negative changed in the repository",
                        entry.id
                    ));
                }
                if pack.pack.pack.redactions.total() > 0 {
                    failures.push(format!(
                        "{}: a negative masked in a document pack",
                        entry.id
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // Nearly every entry was really shown, so the checks above looked at something: a few
    // files a snapshot leaves out (lockfiles) or skips are not.
    assert!(
        in_repository * 10 >= entries.len() * 9,
        "{in_repository} of {} entries indexed",
        entries.len()
    );
    assert_eq!(in_documents, entries.len(), "every document is packed");
}
