//! Approximate vector indexes: probing every list ranks exactly as the full scan does, the
//! default probes find most of the exact top, updates follow inserts, replaces and deletes
//! without training again, builds are deterministic, and a stale or damaged index is never
//! used and is found by `verify`.

use ctxpack_api::docs::{
    AnnRequest, DeleteRequest, DocumentPackRequest, FieldRequest, ImportRequest, ImportSource,
    InsertRequest, VsearchRequest,
};
use ctxpack_api::{Access, Budget, Control, ErrorKind, Selector, VerifyRequest, Workspace};
use serde_json::json;

use crate::api::fast_paths::Lcg;

/// `len` words from a vocabulary of 500, skewed toward the first.
fn words(rng: &mut Lcg, len: u64) -> String {
    (0..len)
        .map(|_| format!("w{}", rng.next(500) * rng.next(500) / 499))
        .collect::<Vec<_>>()
        .join(" ")
}

/// 3,000 documents of 60 to 160 words, and a few without the field.
fn corpus() -> String {
    let mut rng = Lcg(11);
    let mut out = String::new();
    for i in 0..3000u64 {
        let doc = if i % 97 == 5 {
            json!({"_id": i, "status": "x"})
        } else {
            let len = 60 + rng.next(100);
            json!({"_id": i, "status": if i % 3 == 0 { "a" } else { "b" }, "text": words(&mut rng, len)})
        };
        out.push_str(&format!("{doc}\n"));
    }
    out
}

/// Long queries (more non-zero components than a sparse scan reads) and two short ones.
fn queries() -> Vec<String> {
    let mut rng = Lcg(3);
    let mut out: Vec<String> = (0..12).map(|_| words(&mut rng, 120)).collect();
    out.push("w1 w2".into());
    out.push("w7".into());
    out
}

fn field() -> FieldRequest {
    FieldRequest {
        collection: "c".into(),
        field: "text".into(),
        wait: false,
    }
}

fn ann(lists: u32, probes: u32) -> AnnRequest {
    AnnRequest {
        collection: "c".into(),
        field: "text".into(),
        lists,
        probes,
        wait: false,
    }
}

/// A store at `dir/name` with the corpus imported and embedded just now.
fn imported(dir: &std::path::Path, name: &str) -> (Workspace, std::path::PathBuf) {
    let path = dir.join(name);
    let workspace = Workspace::for_store(&path, Access::ReadWrite).expect("workspace");
    workspace.create_store(false).expect("store");
    let file = dir.join("docs.jsonl");
    std::fs::write(&file, corpus()).expect("write");
    workspace
        .import_documents(
            &ImportRequest {
                collection: "c".into(),
                embed: vec!["text".into()],
                ..ImportRequest::default()
            },
            &ImportSource::File(file),
            &Control::new(),
        )
        .expect("import");
    (workspace, path)
}

/// A store at `dir/name` with the corpus imported and embedded: a copy of one imported once
/// for this test binary.
fn store(dir: &std::path::Path, name: &str) -> (Workspace, std::path::PathBuf) {
    let once = ctxpack_testkit::cache::derived("ann-corpus", |cache| {
        imported(cache, "s.ctxpack");
    });
    let path = dir.join(name);
    ctxpack_testkit::cache::copy(&once.join("s.ctxpack"), &path);
    let workspace = Workspace::for_store(&path, Access::ReadWrite).expect("workspace");
    (workspace, path)
}

fn search(workspace: &Workspace, query: &str, k: usize, exact: bool) -> String {
    workspace
        .vsearch(&VsearchRequest {
            collection: "c".into(),
            field: "text".into(),
            query: query.into(),
            k,
            exact,
            ..VsearchRequest::default()
        })
        .expect("vsearch")
        .to_json_line()
}

fn pack(workspace: &Workspace, query: &str) -> String {
    workspace
        .document_pack(
            &DocumentPackRequest {
                collection: "c".into(),
                field: "text".into(),
                query: query.into(),
                budget: Budget::new(3000).expect("a budget"),
                ..DocumentPackRequest::default()
            },
            None,
        )
        .expect("pack")
        .pack
        .to_json_line()
}

/// The `_id`s of a search's hits.
fn ids(answer: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(answer).expect("json");
    value["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["id"].to_string())
        .collect()
}

fn ann_file(store: &std::path::Path) -> std::path::PathBuf {
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    store
        .join("vectors")
        .join(hex("c"))
        .join(format!("{}.ivf", hex("text")))
}

/// Every answer through the index must equal the exact one.
fn assert_exact(workspace: &Workspace, context: &str) {
    for query in queries() {
        for k in [1, 10, 150] {
            assert_eq!(
                search(workspace, &query, k, false),
                search(workspace, &query, k, true),
                "{context}: k {k}, query {query:.40}"
            );
        }
    }
}

#[test]
fn probing_every_list_ranks_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (workspace, path) = store(dir.path(), "s.ctxpack");
    let packs: Vec<String> = queries().iter().map(|q| pack(&workspace, q)).collect();
    let info = workspace.create_ann(&ann(24, 24)).expect("create");
    assert_eq!(info.built, Some((24, 24, 2969)), "{info:?}");
    assert!(ann_file(&path).is_file());
    assert_exact(&workspace, "every list");
    // Packs walk the whole ranking through the index.
    let through: Vec<String> = queries().iter().map(|q| pack(&workspace, q)).collect();
    assert_eq!(through, packs);
    // Filters and short queries never use the index.
    let filtered = |exact| {
        workspace
            .vsearch(&VsearchRequest {
                collection: "c".into(),
                field: "text".into(),
                query: queries()[0].clone(),
                k: 20,
                filter: Some(json!({"status": "a"})),
                exact,
            })
            .expect("vsearch")
    };
    assert_eq!(filtered(false), filtered(true));
    // Two lists of about 1,500 entries each, longer than one read of a list (64 KiB of
    // entries): each is read and scored a part at a time, with the same answers.
    let info = workspace.create_ann(&ann(2, 2)).expect("create");
    assert_eq!(info.built, Some((2, 2, 2969)), "{info:?}");
    assert_exact(&workspace, "two long lists");
    // One of the two probed: a long query is answered from that list's rows first, so some
    // answer differs from the exact one (an index found damaged would be passed over and
    // every answer would be exact).
    let info = workspace.create_ann(&ann(2, 1)).expect("create");
    assert_eq!(info.built, Some((2, 1, 2969)), "{info:?}");
    assert!(
        queries()
            .iter()
            .any(|q| search(&workspace, q, 20, false) != search(&workspace, q, 20, true)),
        "the index answers"
    );
}

#[test]
fn the_default_probes_find_most_of_the_exact_top() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (workspace, _) = store(dir.path(), "s.ctxpack");
    let info = workspace.create_ann(&ann(0, 0)).expect("create");
    // About the square root of 2,969 rows, √540 of them probed.
    assert_eq!(info.built, Some((54, 24, 2969)), "{info:?}");
    let (mut found, mut asked, mut differs) = (0, 0, 0);
    for query in queries().iter().take(12) {
        let approximate = search(&workspace, query, 10, false);
        let exact = search(&workspace, query, 10, true);
        differs += usize::from(approximate != exact);
        let truth = ids(&exact);
        let got = ids(&approximate);
        found += got.iter().filter(|id| truth.contains(id)).count();
        asked += truth.len();
        // Every hit carries its exact score: the one a scan of everything gives it.
        let all = search(&workspace, query, 3000, true);
        let all: serde_json::Value = serde_json::from_str(&all).expect("json");
        let hits: serde_json::Value = serde_json::from_str(&approximate).expect("json");
        for hit in hits["hits"].as_array().expect("hits") {
            let same = all["hits"]
                .as_array()
                .expect("hits")
                .iter()
                .find(|h| h["id"] == hit["id"])
                .expect("a hit of the exact ranking");
            assert_eq!(same["score"], hit["score"]);
        }
    }
    // A walk past the probed lists (about 1,300 of the 2,969 rows) goes on exactly through
    // the other documents, without passing any twice, each with its exact score.
    let deep = |exact_scan: bool| {
        let request = DocumentPackRequest {
            collection: "c".into(),
            field: "text".into(),
            query: queries()[0].clone(),
            budget: Budget::new(10_000_000).expect("a budget"),
            selector: Selector::Skip,
            top_k: Some(2500),
            ..DocumentPackRequest::default()
        };
        if exact_scan {
            workspace.drop_ann(&ann(0, 0)).expect("drop");
        }
        let pack = workspace.document_pack(&request, None).expect("pack");
        pack.pack.to_json()["chunks"]
            .as_array()
            .expect("chunks")
            .iter()
            .map(|c| (c["id"].to_string(), c["score"].to_string()))
            .collect::<Vec<_>>()
    };
    let through = deep(false);
    let exact = deep(true);
    assert_eq!(through.len(), 2500);
    let distinct: std::collections::HashSet<_> = through.iter().map(|(id, _)| id).collect();
    assert_eq!(distinct.len(), 2500, "a document passed twice");
    assert_ne!(through, exact, "the walk began in the probed lists");
    // After the probed lists, the walk goes on in exact order: every document that ranks
    // above the last one it visited was visited.
    let last: f64 = through[2499].1.parse().expect("a score");
    for (id, score) in &exact {
        if score.parse::<f64>().expect("a score") > last {
            assert!(distinct.contains(id), "{id} ({score}) was skipped");
        }
    }
    let scores: std::collections::HashMap<_, _> = exact.into_iter().collect();
    for (id, score) in &through {
        if let Some(same) = scores.get(id) {
            assert_eq!(same, score, "{id}");
        }
    }
    // 24 lists of 54 read: rows placed at random would give about four in nine (0.95 here).
    let recall = found as f64 / asked as f64;
    assert!(recall >= 0.8, "recall@10 {recall:.3}");
    // The index was used: not every answer is the exact one.
    assert!(differs > 0, "no answer differs from the exact scan");
}

#[test]
fn updates_follow_inserts_replaces_and_deletes_without_training_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (workspace, path) = store(dir.path(), "s.ctxpack");
    workspace.create_ann(&ann(24, 24)).expect("create");
    let before = std::fs::read(ann_file(&path)).expect("read");
    let centroids = 64..64 + 24 * 256 * 4;

    let mut rng = Lcg(99);
    let target = words(&mut rng, 120);
    workspace
        .insert_document(&InsertRequest {
            collection: "c".into(),
            document: json!({"_id": "new", "text": target.clone()}),
            replace: false,
            wait: false,
        })
        .expect("insert");
    // Not yet synced: the index is stale (a document has no vector) and the search is exact,
    // embedding the new document on the fly.
    assert_eq!(ids(&search(&workspace, &target, 1, false)), ["\"new\""]);
    assert_exact(&workspace, "stale");

    workspace
        .insert_document(&InsertRequest {
            collection: "c".into(),
            document: json!({"_id": 7, "text": words(&mut rng, 90)}),
            replace: true,
            wait: false,
        })
        .expect("replace");
    workspace
        .delete_documents(&DeleteRequest {
            collection: "c".into(),
            filter: json!({"_id": {"$in": [1, 2, 3, 4]}}),
            wait: false,
        })
        .expect("delete");
    workspace.vsync(&field(), &Control::new()).expect("vsync");
    let after = std::fs::read(ann_file(&path)).expect("read");
    assert!(before != after, "the index follows the vectors");
    assert!(
        before[centroids.clone()] == after[centroids],
        "the centroids are kept"
    );
    let info = workspace.ann_indexes("c").expect("list");
    assert_eq!(info[0].built, Some((24, 24, 2969 + 1 - 4)), "{info:?}");
    assert_exact(&workspace, "updated");
    assert_eq!(ids(&search(&workspace, &target, 1, false)), ["\"new\""]);
    for query in queries() {
        let hits = ids(&search(&workspace, &query, 3000, false));
        for gone in ["1", "2", "3", "4"] {
            assert!(!hits.contains(&gone.to_owned()), "{gone} was deleted");
        }
    }
}

#[test]
fn builds_are_deterministic_and_declarations_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    // One imported now, one a copy of the store imported once: two imports.
    let (one, one_path) = imported(dir.path(), "one.ctxpack");
    let (two, two_path) = store(dir.path(), "two.ctxpack");
    one.create_ann(&ann(0, 0)).expect("create");
    two.create_ann(&ann(0, 0)).expect("create");
    // Byte for byte, but for the generation token each store draws at random.
    let without_token = |path: &std::path::Path| {
        let mut bytes = std::fs::read(ann_file(path)).expect("read");
        bytes[32..48].fill(0);
        bytes
    };
    assert!(
        without_token(&one_path) == without_token(&two_path),
        "two builds differ"
    );
    // Other lists train again; dropping removes the file and the declaration.
    let info = one.create_ann(&ann(10, 2)).expect("again");
    assert_eq!(info.built, Some((10, 2, 2969)));
    assert_eq!(one.ann_indexes("c").expect("list").len(), 1);
    assert!(one.drop_ann(&ann(0, 0)).expect("drop"));
    assert!(!ann_file(&one_path).exists());
    assert!(one.ann_indexes("c").expect("list").is_empty());
    assert!(!one.drop_ann(&ann(0, 0)).expect("drop again"));
    let err = one
        .create_ann(&AnnRequest {
            collection: "missing".into(),
            ..ann(0, 0)
        })
        .expect_err("no such collection");
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn a_damaged_index_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (workspace, path) = store(dir.path(), "s.ctxpack");
    workspace.create_ann(&ann(16, 1)).expect("create");
    let file = ann_file(&path);
    let good = std::fs::read(&file).expect("read");
    let sound = workspace
        .verify(&VerifyRequest { repair: false }, &Control::new())
        .expect("verify runs");
    assert!(sound.found.is_empty(), "a sound file: {sound}");
    let offsets = 64 + 16 * 256 * 4;
    let mut damaged: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() - 1].to_vec()),
        ("empty", Vec::new()),
        ("garbage", vec![0xAB; good.len()]),
    ];
    let mut swapped = good.clone();
    // The first list's end after the second's: offsets out of order.
    swapped[offsets + 8..offsets + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    damaged.push(("offsets", swapped));
    let mut lists = good.clone();
    lists[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    damaged.push(("lists", lists));
    // Every list's second entry made a copy of its first: a row listed twice.
    let entries = offsets + 17 * 8;
    let entry = 16 + 256;
    let offset = |bytes: &[u8], j: usize| {
        let at = offsets + j * 8;
        u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes")) as usize
    };
    let mut twice = good.clone();
    for j in 0..16 {
        let (from, to) = (offset(&good, j), offset(&good, j + 1));
        if to - from >= 2 {
            let first = entries + from * entry;
            let copy = twice[first..first + entry].to_vec();
            twice[first + entry..first + 2 * entry].copy_from_slice(&copy);
        }
    }
    damaged.push(("a row listed twice", twice));
    let verified = |what: &str| {
        let report = workspace
            .verify(&VerifyRequest { repair: false }, &Control::new())
            .expect("verify runs");
        assert!(
            report
                .found
                .iter()
                .any(|p| p.part == "vectors" && p.detail.contains("approximate index file")),
            "{what}: {report}"
        );
    };
    for (what, bytes) in damaged {
        std::fs::write(&file, &bytes).expect("write");
        assert_exact(&workspace, what);
        verified(what);
    }
    // A header claiming 2^26 entries in the first list, the file sparse to the length that
    // claims: no list is allocated for it (it would take 18 GB), the exact scan answers.
    let claimed: u64 = 1 << 26;
    let count = u64::from_le_bytes(good[24..32].try_into().expect("8 bytes"));
    let mut huge = good.clone();
    huge[24..32].copy_from_slice(&(count + claimed).to_le_bytes());
    for j in 1..=16 {
        let moved = offset(&good, j) as u64 + claimed;
        huge[offsets + j * 8..offsets + j * 8 + 8].copy_from_slice(&moved.to_le_bytes());
    }
    std::fs::write(&file, &huge).expect("write");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("open")
        .set_len((entries as u64) + (count + claimed) * entry as u64)
        .expect("sparse");
    assert_exact(&workspace, "a claim of 2^26 entries");
    verified("a claim of 2^26 entries");
    // A link in its place is refused, as everywhere in a store, and never followed.
    std::fs::remove_file(&file).expect("remove");
    #[cfg(unix)]
    {
        let outside = dir.path().join("outside.ivf");
        std::fs::write(&outside, &good).expect("write");
        std::os::unix::fs::symlink(&outside, &file).expect("link");
        let refused = workspace
            .vsearch(&VsearchRequest {
                collection: "c".into(),
                field: "text".into(),
                query: queries()[0].clone(),
                ..VsearchRequest::default()
            })
            .expect_err("a link");
        assert_eq!(refused.kind(), ErrorKind::Damaged, "{refused}");
        assert!(refused.to_string().contains("symbolic link"), "{refused}");
        std::fs::remove_file(&file).expect("remove");
    }
    std::fs::write(&file, &huge).expect("write");
    // `verify --repair` removes it; searches scan exactly until it is built again.
    let report = workspace
        .verify(&VerifyRequest { repair: true }, &Control::new())
        .expect("verify runs");
    assert!(report.remaining.is_empty(), "{report}");
    assert!(std::fs::symlink_metadata(&file).is_err());
}
