//! A repository must never make ctxpack touch files outside it. A fixture repository carries
//! a symbolic link at each path ctxpack keeps in its store, pointing into a sentinel directory
//! outside the repository; every command and every MCP tool runs on it, and the sentinel is
//! byte-identical afterwards. Links that git tracks make the whole store untrusted; links that
//! appear untracked (or below a store the user named) are refused where they are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ctxpack::args::Location;
use ctxpack::mcp::{Scope, Server};
use ctxpack_api::Control;
use serde_json::json;

use crate::ctxpack;
use crate::pack::{Cli, Fixture, Script};

/// Every file, directory and link below `dir`, with file bytes and link targets.
pub(crate) fn contents(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        let rel = path.strip_prefix(dir).expect("below").to_owned();
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("readlink");
            out.insert(rel, format!("link {}", target.display()));
        } else if meta.is_dir() {
            out.insert(rel, "dir".into());
            for entry in std::fs::read_dir(&path).expect("readdir") {
                stack.push(entry.expect("entry").path());
            }
        } else {
            let bytes = std::fs::read(&path).expect("read");
            out.insert(rel, format!("file {}", String::from_utf8_lossy(&bytes)));
        }
    }
    out
}

/// The outside world: a directory with a file to append to, a directory to write into, and
/// names that do not exist yet (links to them would create them).
fn sentinel() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bashrc"), "export SAFE=1\n").expect("write");
    std::fs::create_dir_all(dir.path().join("store/lexical")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("texts")).expect("mkdir");
    dir
}

/// Where each link sits in the store, and what outside it points at.
const LINKS: &[(&str, &str)] = &[
    (".ctxpack", "store"),
    (".ctxpack/writer.lock", "bashrc"),
    (".ctxpack/.gitignore", "created-gitignore"),
    (".ctxpack/ledger/packs.jsonl", "bashrc"),
    (".ctxpack/ledger/texts", "texts"),
    (".ctxpack/ctxpack.sqlite", "created-db"),
    (".ctxpack/ctxpack.sqlite-wal", "created-wal"),
    (".ctxpack/ctxpack.sqlite-shm", "created-shm"),
    (".ctxpack/lexical", "store/lexical"),
    (".ctxpack/vectors", "store"),
];

/// Every command that opens the store, with the arguments the fixture needs.
fn commands(plan: &str) -> Vec<Vec<String>> {
    let c = |args: &[&str]| args.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    vec![
        c(&["index"]),
        c(&["index", "--rebuild"]),
        c(&["pack", "budget", "--index"]),
        c(&["pack", "budget"]),
        c(&["context", "pack", "budget"]),
        c(&["status"]),
        c(&["query", "budget"]),
        c(&["log"]),
        c(&["show", "abcd"]),
        c(&["artifact", "list"]),
        c(&["artifact", "add", "-", "--scope", "session"]),
        c(&["artifact", "rm", "x"]),
        c(&["plan", "run", plan]),
        c(&["verify"]),
        c(&["verify", "--repair"]),
    ]
}

/// Calls every MCP tool at both scopes; returns the exit codes of their envelopes.
fn every_tool(repo: &Path, store: Option<PathBuf>) -> Vec<(String, i64)> {
    let location = Location {
        cwd: repo.to_owned(),
        store,
    };
    let mut codes = Vec::new();
    for scope in [Scope::Read, Scope::Write] {
        let server = Server::new(scope, &location).expect("the server starts");
        for (tool, arguments) in [
            ("repo_context_pack", json!({"goal": "budget"})),
            ("query", json!({"goal": "budget"})),
            ("status", json!({})),
            ("index", json!({})),
            (
                "artifact_add",
                json!({"scope": "session", "content": "notes"}),
            ),
        ] {
            let Ok(result) = server.call(tool, arguments.as_object().cloned(), &Control::new())
            else {
                continue; // a write tool at read scope is refused before anything runs
            };
            let code = result
                .structured_content
                .as_ref()
                .and_then(|v| v["error"]["exitCode"].as_i64())
                .unwrap_or(0);
            codes.push((format!("{tool} at {scope:?}"), code));
        }
    }
    codes
}

#[test]
fn tracked_store_links_are_refused_and_nothing_outside_changes() {
    for (link, target) in LINKS {
        let outside = sentinel();
        let before = contents(outside.path());
        let f = Fixture::new();
        f.write("src/budget.rs", "/// Budgets.\npub fn budget() {}\n");
        let path = f.path().join(link);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(outside.path().join(target), &path).expect("symlink");
        f.commit("a repository that carries a store link");
        let plan = plan_file();
        for args in commands(plan.1.to_str().expect("UTF-8")) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let run = f.run(&args);
            assert_eq!(run.code, 4, "{link}: {args:?}\n{}", run.transcript());
        }
        for (tool, code) in every_tool(f.path(), None) {
            assert_eq!(code, 4, "{link}: {tool}");
        }
        assert_eq!(
            contents(outside.path()),
            before,
            "{link}: the outside changed"
        );
    }
}

#[test]
fn untracked_links_below_a_store_are_refused_even_when_the_store_is_named() {
    // Links below the root: refused whether the store is the default one (untracked) or
    // named with --store. (A link at the root of a store the user named is the user's own
    // choice, and is followed.)
    // A clean repository, indexed once; each case takes a copy.
    let clean = Script::new()
        .write("src/budget.rs", "/// Budgets.\npub fn budget() {}\n")
        .commit("clean")
        .build();
    for (link, target) in &LINKS[1..] {
        for named in [false, true] {
            let outside = sentinel();
            let f = clean.derived("indexed", |f| assert_eq!(f.run(&["index"]).code, 0));
            let path = f.path().join(link);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                std::fs::remove_dir_all(&path).expect("rm");
            } else {
                let _ = std::fs::remove_file(&path);
            }
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::os::unix::fs::symlink(outside.path().join(target), &path).expect("symlink");
            let before = contents(outside.path());
            let store = f.path().join(".ctxpack");
            let plan = plan_file();
            for mut args in commands(plan.1.to_str().expect("UTF-8")) {
                if named {
                    args.extend(["--store".to_owned(), store.display().to_string()]);
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let run = f.run(&args);
                assert_eq!(
                    run.code,
                    4,
                    "{link} (named {named}): {args:?}\n{}",
                    run.transcript()
                );
            }
            for (tool, code) in every_tool(f.path(), named.then(|| store.clone())) {
                assert_eq!(code, 4, "{link} (named {named}): {tool}");
            }
            // Documents in the store: every docs command refuses too.
            let store_arg = store.display().to_string();
            for args in [
                vec!["docs", "collections", &store_arg],
                vec!["docs", "insert", &store_arg, "c", "{\"a\":1}"],
                vec!["docs", "vsync", &store_arg, "c", "text"],
            ] {
                let run = ctxpack(&args, b"");
                assert_eq!(run.code, 4, "{link}: {args:?}\n{}", run.transcript());
            }
            assert_eq!(contents(outside.path()), before, "{link} (named {named})");
        }
    }
}

/// A plan that queries the store, in a directory of its own.
fn plan_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("plan.ctx");
    std::fs::write(
        &path,
        "flow f\n  hits = query(\"budget\", top: 3)\n  ctx c\n    purpose \"p\"\n    budget 100\n    include hits\n  emit c\n",
    )
    .expect("write");
    (dir, path)
}

/// A store committed to the repository (its chunk texts could be forged to cite as real code)
/// is refused unless the user names it.
#[test]
fn a_committed_store_is_trusted_only_when_named() {
    let f = Fixture::new();
    f.write("src/budget.rs", "/// Budgets.\npub fn budget() {}\n");
    let first = f.commit("clean");
    assert_eq!(f.run(&["index"]).code, 0);
    f.git(&["add", "-f", ".ctxpack"]);
    f.git(&["commit", "-q", "-m", "a store comes along"]);
    let run = f.run(&["pack", "budget", "--at", &first]);
    assert_eq!(run.code, 4, "{}", run.transcript());
    assert!(run.stderr.contains("is tracked by git"), "{}", run.stderr);
    let store = f.path().join(".ctxpack").display().to_string();
    let run = f.run(&["pack", "budget", "--at", &first, "--store", &store]);
    assert_eq!(run.code, 0, "{}", run.transcript());
}
