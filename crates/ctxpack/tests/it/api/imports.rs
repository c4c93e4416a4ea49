//! Import edges: a file that one of the best files imports gains a share of that file's
//! evidence, the edges follow the file version each snapshot lists, and a one-file commit
//! moves them as soon as it is indexed; a large file lends the imports of its first part.

use ctxpack_api::{QueryHit, Workspace};

use crate::api::fixture::{Fixture, Workspaces, index_at, parts, rank_of, top_hits};

const GOAL: &str = "throttle limiter";

/// The importing file's text, importing `module`.
fn engine(module: &str) -> String {
    format!(
        "use crate::{module}::Part;\n\n/// The throttle limiter: throttle, limiter, throttle.\npub fn throttle_limiter(p: Part) -> u32 {{\n    // throttle the limiter\n    p.0\n}}\n"
    )
}

/// Two modules that mention the limiter once each, and an engine, all about the throttle
/// limiter, that imports the first.
fn project() -> (Fixture, String) {
    let f = Fixture::new();
    for module in ["gears", "valves"] {
        f.write(
            &format!("src/{module}.rs"),
            "/// A part the limiter may use.\npub struct Part(pub u32);\n",
        );
    }
    f.write("src/engine.rs", engine("gears"));
    let sha = f.commit("Import the project");
    (f, sha)
}

fn query(workspace: &Workspace, at: &str) -> Vec<QueryHit> {
    top_hits(workspace, GOAL, at)
}

fn imported(hits: &[QueryHit], path: &str) -> f64 {
    parts(hits, path)
        .map(|p| p.imported)
        .unwrap_or_else(|| panic!("{path} is not among the hits: {hits:#?}"))
}

#[test]
fn an_imported_file_gains_and_the_edges_move_with_a_one_file_commit() {
    let (f, first) = project();
    let workspace = f.workspace();
    index_at(&workspace, &first);
    let hits = query(&workspace, &first);
    assert_eq!(rank_of(&hits, "src/engine.rs"), 0, "{hits:#?}");
    assert!(imported(&hits, "src/gears.rs") > 0.0, "{hits:#?}");
    assert_eq!(imported(&hits, "src/valves.rs"), 0.0);
    assert!(
        rank_of(&hits, "src/gears.rs") < rank_of(&hits, "src/valves.rs"),
        "the imported twin ranks first: {hits:#?}"
    );

    // The engine now imports the other module; nothing else changes.
    f.write("src/engine.rs", engine("valves"));
    let second = f.commit("Take the part from the valves");
    let summary = index_at(&workspace, &second);
    assert_eq!(
        summary.processed, 1,
        "one changed file is read: {summary:?}"
    );
    let hits = query(&workspace, &second);
    assert!(imported(&hits, "src/valves.rs") > 0.0, "{hits:#?}");
    assert_eq!(imported(&hits, "src/gears.rs"), 0.0, "{hits:#?}");
    assert!(rank_of(&hits, "src/valves.rs") < rank_of(&hits, "src/gears.rs"));

    // The first snapshot keeps its own edges.
    let again = query(&workspace, &first);
    assert!(imported(&again, "src/gears.rs") > 0.0, "{again:#?}");
    assert_eq!(imported(&again, "src/valves.rs"), 0.0);
}

#[test]
fn imports_are_read_from_the_first_part_of_a_large_file() {
    // The engine imports the gears at its top, then holds more than the parsed share of
    // functions that import something of their own, and imports the valves only at its end.
    let f = Fixture::new();
    for module in ["gears", "valves"] {
        f.write(
            &format!("src/{module}.rs"),
            "/// A part the limiter may use.\npub struct Part(pub u32);\n",
        );
    }
    let mut text = engine("gears");
    for i in 0..400 {
        text.push_str(&format!(
            "\n/// Helper {i}: use it where a caller would use the raw value; callers use it \
             rather than reading the field, and tests use it too.\npub fn helper_{i}(x: u32) -> u32 {{\n    use core::convert::identity;\n    identity(x) + {i}\n}}\n"
        ));
    }
    assert!(text.len() > 64 * 1024, "{} bytes", text.len());
    text.push_str("\npub fn late() -> u32 {\n    use crate::valves::Part;\n    Part(1).0\n}\n");
    f.write("src/engine.rs", text);
    let sha = f.commit("Import the project");
    let workspace = f.workspace();
    index_at(&workspace, &sha);
    let hits = query(&workspace, &sha);
    assert_eq!(rank_of(&hits, "src/engine.rs"), 0, "{hits:#?}");
    assert!(imported(&hits, "src/gears.rs") > 0.0, "{hits:#?}");
    assert_eq!(imported(&hits, "src/valves.rs"), 0.0, "{hits:#?}");
}

/// What a file imports is worked out when its version is indexed and stored with it: a pack
/// reads it there rather than parsing the file's chunks, and a version stored without it (by
/// an older ctxpack) or with a damaged value is parsed, to the same pack.
#[test]
fn a_pack_reads_the_imports_stored_at_index_time() {
    use ctxpack_api::{PackOptions, SnapshotPackRequest};
    let (f, sha) = project();
    let workspace = f.workspace();
    index_at(&workspace, &sha);
    let db = rusqlite::Connection::open(f.store().join("ctxpack.sqlite")).expect("the store");
    let stored: String = db
        .query_row(
            "SELECT imports FROM files WHERE path = 'src/engine.rs'",
            [],
            |r| r.get(0),
        )
        .expect("the engine's imports are stored");
    assert!(
        stored.contains("gears") && !stored.contains("valves"),
        "{stored}"
    );
    let request = SnapshotPackRequest {
        goal: GOAL.into(),
        at: sha.clone(),
        index: false,
        ..SnapshotPackRequest::default()
    };
    let pack = || {
        let packed = workspace
            .snapshot_pack(&request, &PackOptions::default())
            .expect("packs");
        ctxpack_api::pack_json(&packed.pack, ctxpack_api::View::Full)
    };
    let from_store = pack();
    let set = |value: &str| {
        db.execute(
            &format!("UPDATE files SET imports = {value} WHERE path = 'src/engine.rs'"),
            [],
        )
        .expect("update");
    };
    // The stored value is what ranking reads: one that names the other module moves the edge,
    // though the engine's text still imports the gears.
    set("replace(imports, 'gears', 'valves')");
    let hits = query(&workspace, &sha);
    assert!(imported(&hits, "src/valves.rs") > 0.0, "{hits:#?}");
    assert_eq!(imported(&hits, "src/gears.rs"), 0.0, "{hits:#?}");
    // None stored, or a value that does not decode: the chunks are parsed, to the same pack.
    for value in ["NULL", "'not json'", "42", "x'00ff'"] {
        set(value);
        assert_eq!(pack(), from_store, "imports = {value}");
        let hits = query(&workspace, &sha);
        assert!(imported(&hits, "src/gears.rs") > 0.0, "{value}: {hits:#?}");
    }
}
