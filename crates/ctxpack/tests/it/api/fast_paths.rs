//! Fast paths of ranked search give the answers of the slow ones, byte for byte: a sparse
//! scan of the vector file (short queries), a full scan of its blocks of columns (long
//! queries), an indexed filter applied while walking the ranking, against a scan of the
//! embeddings table with every filter listed from the bodies.

use ctxpack_api::docs::{
    DocumentPackRequest, FieldRequest, ImportRequest, ImportSource, VsearchRequest,
};
use ctxpack_api::{Access, Budget, Control, Selector, Workspace};
use serde_json::{Value, json};

/// A deterministic stream of numbers (a 64-bit LCG), so the corpus is the same on every run.
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

const WORDS: [&str; 24] = [
    "alpha", "beta", "gamma", "delta", "search", "index", "cake", "store", "vector", "query",
    "budget", "token", "rank", "score", "filter", "field", "pack", "cite", "drop", "scale",
    "block", "column", "sparse", "exact",
];

/// 2,500 documents (three blocks of the vector file): texts of 0 to 30 words drawn mostly
/// from the first words, repeated texts (ties), documents without the field or with a number
/// there, and a status that is common (`a`), middling (`b`) or rare (`c`).
fn corpus() -> String {
    let mut rng = Lcg(7);
    let mut lines = String::new();
    let mut previous = String::new();
    for i in 0..2500u64 {
        let status = match rng.next(20) {
            0 => "c",
            1..=6 => "b",
            _ => "a",
        };
        let text: String = if rng.next(10) == 0 {
            previous.clone()
        } else {
            let len = rng.next(31);
            (0..len)
                .map(|_| WORDS[(rng.next(24) * rng.next(24) / 23) as usize])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let doc = match rng.next(40) {
            0 => json!({"_id": i, "status": status, "n": i % 11}),
            1 => json!({"_id": i, "status": status, "n": i % 11, "text": i}),
            _ => json!({"_id": i, "status": status, "n": i % 11, "text": text}),
        };
        previous = text;
        lines.push_str(&format!("{doc}\n"));
    }
    lines
}

fn queries() -> Vec<String> {
    let mut out: Vec<String> = WORDS.iter().step_by(3).map(|w| (*w).to_owned()).collect();
    out.extend(
        [
            "alpha beta",
            "search index store",
            "sparse exact column block",
            "cake",
            "nowhere",
            "alpha nowhere",
        ]
        .map(str::to_owned),
    );
    // More distinct words than a sparse scan reads: scored in full.
    out.push(
        (0..80)
            .map(|i| format!("w{i}"))
            .chain(WORDS.iter().map(|w| (*w).to_owned()))
            .collect::<Vec<_>>()
            .join(" "),
    );
    out
}

fn filters() -> Vec<Option<Value>> {
    vec![
        None,
        Some(json!({"status": "a"})),
        Some(json!({"status": "c"})),
        Some(json!({"status": {"$in": ["b", "c"]}})),
        Some(json!({"n": {"$gt": 5}})),
    ]
}

/// Every answer: vsearch at three depths and packs with two selectors, for every query and
/// filter.
fn answers(workspace: &Workspace) -> Vec<String> {
    let mut out = Vec::new();
    for query in queries() {
        for filter in filters() {
            for k in [1, 10, 200] {
                let outcome = workspace
                    .vsearch(&VsearchRequest {
                        collection: "c".into(),
                        field: "text".into(),
                        query: query.clone(),
                        k,
                        filter: filter.clone(),
                        exact: false,
                    })
                    .expect("vsearch");
                out.push(outcome.to_json_line());
            }
            for (selector, top_k) in [(Selector::Prefix, None), (Selector::Skip, Some(300))] {
                let pack = workspace
                    .document_pack(
                        &DocumentPackRequest {
                            collection: "c".into(),
                            field: "text".into(),
                            query: query.clone(),
                            budget: Budget::new(300).expect("a budget"),
                            selector,
                            top_k,
                            filter: filter.clone(),
                            ..DocumentPackRequest::default()
                        },
                        None,
                    )
                    .expect("pack");
                out.push(pack.pack.to_json_line());
            }
        }
    }
    out
}

#[test]
fn answer_exactly_what_the_table_scan_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("app.ctxpack");
    let workspace = Workspace::for_store(&store, Access::ReadWrite).expect("workspace");
    workspace.create_store(false).expect("store");
    let file = dir.path().join("docs.jsonl");
    std::fs::write(&file, corpus()).expect("write");
    workspace
        .import_documents(
            &ImportRequest {
                collection: "c".into(),
                ..ImportRequest::default()
            },
            &ImportSource::File(file),
            &Control::new(),
        )
        .expect("import");
    let field = |name: &str| FieldRequest {
        collection: "c".into(),
        field: name.into(),
        wait: false,
    };
    workspace
        .vsync(&field("text"), &Control::new())
        .expect("vsync");
    workspace
        .create_field_index(&field("status"))
        .expect("index");
    // The slow way, on a copy of this store: no vector file (the table is scanned) and no
    // index (filters read bodies).
    let slow_store = dir.path().join("slow.ctxpack");
    ctxpack_testkit::cache::copy(&store, &slow_store);
    std::fs::remove_dir_all(slow_store.join("vectors")).expect("no vector file");
    let slow_workspace = Workspace::for_store(&slow_store, Access::ReadWrite).expect("workspace");
    assert!(
        slow_workspace
            .drop_field_index(&field("status"))
            .expect("drop")
    );

    // Embedding while importing stores what import then vsync store: the same answers, and
    // nothing left to sync.
    let other_store = dir.path().join("other.ctxpack");
    let other = Workspace::for_store(&other_store, Access::ReadWrite).expect("workspace");
    other.create_store(false).expect("store");
    let report = other
        .import_documents(
            &ImportRequest {
                collection: "c".into(),
                batch_size: 300,
                embed: vec!["text".into()],
                ..ImportRequest::default()
            },
            &ImportSource::File(dir.path().join("docs.jsonl")),
            &Control::new(),
        )
        .expect("import with embeddings");
    assert_eq!(report.imported, 2500);
    let stale = other.vstale(&field("text")).expect("vstale");
    assert!(
        stale.missing.is_empty() && stale.stale.is_empty(),
        "{stale:?}"
    );
    assert_eq!(report.embedded, stale.current);
    assert!(
        other_store.join("vectors").is_dir(),
        "the vector file is written"
    );
    other.create_field_index(&field("status")).expect("index");
    // The three stores answer independently: at once.
    let (fast, embedded, slow) = std::thread::scope(|scope| {
        let fast = scope.spawn(|| answers(&workspace));
        let embedded = scope.spawn(|| answers(&other));
        let slow = answers(&slow_workspace);
        (
            fast.join().expect("the fast answers"),
            embedded
                .join()
                .expect("the answers of the store embedded on import"),
            slow,
        )
    });
    assert_eq!(embedded, fast);
    assert_eq!(fast.len(), slow.len());
    for (i, (fast, slow)) in fast.iter().zip(&slow).enumerate() {
        assert_eq!(fast, slow, "answer {i}");
    }
    // The answers are not trivial: most rank something.
    let empty = fast.iter().filter(|a| a.contains("\"hits\":[]")).count();
    assert!(
        empty < fast.len() / 4,
        "{empty} of {} are empty",
        fast.len()
    );
}

/// The heads ranking weighs are read from their index without the chunks' text, and say of
/// every chunk what its text says: whether it holds a test marker, near misses and text
/// around multi-byte characters included. A store whose index was dropped reads the text and
/// says the same.
#[test]
fn chunk_heads_read_from_their_index_say_what_the_text_says() {
    use crate::api::fixture::{Script, Workspaces as _, index_at};
    use ctxpack_store::{Store, has_test_marker};

    let mut script = Script::new();
    script
        .write(
            "src/a.rs",
            "pub fn a() {}\n\n#[test]\nfn a_works() { a() }\n",
        )
        .write("src/b.rs", "#[cfg(test)]\nmod checks {\n    fn b() {}\n}\n")
        .write(
            "src/near.rs",
            "// #[tes t] and #[Test] are not markers\npub fn n() {}\n",
        )
        .write("tests_py/t.py", "def test_sum():\n    assert 1 + 1 == 2\n")
        .write("tests_py/u.py", "def testing():\n    pass\n")
        .write("go/x.go", "package x\n\nfunc TestX(t *testing.T) {}\n")
        .write("go/y.go", "package x\n\nfunc Testy() {}\n")
        .write("java/A.java", "class A {\n  @Test\n  void works() {}\n}\n")
        .write(
            "notes.md",
            "# Notes é ü\n\nThé test: `@Tes` is not, é@Test is.\n",
        )
        .write("plain.md", "# Plain é\n\nNothing to see.\n")
        .commit("markers");
    let f = script.build().checkout();
    let workspace = f.workspace();
    index_at(&workspace, "HEAD");
    let rows: Vec<(i64, String)> = {
        let conn = rusqlite::Connection::open(f.store().join("ctxpack.sqlite")).expect("open");
        let mut select = conn
            .prepare("SELECT id, text FROM chunks ORDER BY id")
            .expect("select");
        select
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let expected: Vec<(i64, bool)> = rows
        .iter()
        .map(|(id, text)| (*id, has_test_marker(text)))
        .collect();
    let marked = expected.iter().filter(|e| e.1).count();
    assert!(
        marked >= 5 && marked < rows.len(),
        "{marked} of {}",
        rows.len()
    );
    let heads = |store: &Store| -> Vec<(i64, bool)> {
        let mut heads: Vec<(i64, bool)> = store
            .chunk_heads(&ids)
            .expect("heads")
            .into_iter()
            .map(|h| (h.id, h.test_marker))
            .collect();
        heads.sort();
        heads
    };
    assert_eq!(
        heads(&Store::open(&f.store()).expect("the store")),
        expected
    );
    rusqlite::Connection::open(f.store().join("ctxpack.sqlite"))
        .expect("open")
        .execute_batch("DROP INDEX chunk_heads")
        .expect("drop");
    assert_eq!(
        heads(&Store::open(&f.store()).expect("the store")),
        expected
    );
}
