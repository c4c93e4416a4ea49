//! The layering rule: the API and every crate below it depend on no command-line, protocol,
//! terminal or async crate. Checked on the resolved dependency graph (`cargo metadata`),
//! following normal and build dependencies (not dev-dependencies, which only tests use).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::Command;

use serde_json::Value;

/// Crates only front ends may use.
const FRONT_END_ONLY: &[&str] = &[
    "clap",
    "clap_builder",
    "clap_complete",
    "clap_mangen",
    "rmcp",
    "indicatif",
    "console",
    "axum",
    "hyper",
    "tokio",
    "tower",
    "rustls",
    "tokio-rustls",
    "tracing-subscriber",
];

/// Crates whose own dependencies are not walked: the PostgreSQL client runs tokio-postgres on a
/// private runtime behind a synchronous interface, so no async type reaches the API.
const SEALED: &[&str] = &["postgres"];

/// The workspace's library crates, from the API down.
const LIBRARIES: &[&str] = &[
    "ctxpack-api",
    "ctxpack-core",
    "ctxpack-meter",
    "ctxpack-store",
    "ctxpack-index",
    "ctxpack-docs",
    "ctxpack-plan",
];

/// The resolved dependency graph of the workspace.
struct Graph {
    metadata: Value,
}

impl Graph {
    fn load() -> Graph {
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
        let out = Command::new(env!("CARGO"))
            .args([
                "metadata",
                "--format-version",
                "1",
                "--locked",
                "--manifest-path",
                manifest,
            ])
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Graph {
            metadata: serde_json::from_slice(&out.stdout).expect("metadata is JSON"),
        }
    }

    /// The names of every package `root` reaches through normal and build dependencies.
    fn reached(&self, root: &str) -> BTreeSet<&str> {
        let names: HashMap<&str, &str> = self.metadata["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|p| {
                (
                    p["id"].as_str().expect("id"),
                    p["name"].as_str().expect("name"),
                )
            })
            .collect();
        let nodes: HashMap<&str, &Value> = self.metadata["resolve"]["nodes"]
            .as_array()
            .expect("a resolved graph")
            .iter()
            .map(|n| (n["id"].as_str().expect("id"), n))
            .collect();
        let start = names
            .iter()
            .find(|(_, name)| **name == root)
            .map(|(id, _)| *id)
            .unwrap_or_else(|| panic!("{root} is in the graph"));
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            if SEALED.contains(&names[id]) {
                continue;
            }
            for dep in nodes[id]["deps"].as_array().expect("deps") {
                let runtime = dep["dep_kinds"]
                    .as_array()
                    .expect("dep kinds")
                    .iter()
                    .any(|k| k["kind"].as_str() != Some("dev"));
                if runtime {
                    stack.push(dep["pkg"].as_str().expect("pkg"));
                }
            }
        }
        seen.iter().map(|id| names[id]).collect()
    }
}

#[test]
fn the_api_and_the_crates_below_it_use_no_front_end_crate() {
    let graph = Graph::load();
    for library in LIBRARIES {
        let reached = graph.reached(library);
        let forbidden: Vec<&str> = FRONT_END_ONLY
            .iter()
            .copied()
            .filter(|c| reached.contains(c))
            .collect();
        assert!(
            forbidden.is_empty(),
            "{library} depends on front-end crates {forbidden:?}"
        );
    }
    // The sealed client is there, and what it seals is not walked.
    let api = graph.reached("ctxpack-api");
    assert!(api.contains("postgres") && !api.contains("tokio-postgres"));
    // The walk is real: the front end reaches the API and the front-end crates it adapts.
    let front_end = graph.reached("ctxpack");
    for expected in ["ctxpack-api", "clap", "rmcp", "indicatif", "tokio"] {
        assert!(front_end.contains(expected), "ctxpack reaches {expected}");
    }
}

#[test]
fn the_front_end_depends_on_the_api_alone_among_the_workspace_crates() {
    let graph = Graph::load();
    let packages = graph.metadata["packages"].as_array().expect("packages");
    let cli = packages
        .iter()
        .find(|p| p["name"] == "ctxpack")
        .expect("the ctxpack package");
    let workspace: BTreeSet<&str> = cli["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter(|d| {
            d["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ctxpack-"))
        })
        .filter(|d| d["kind"].is_null())
        .map(|d| d["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(workspace, BTreeSet::from(["ctxpack-api"]));
}

/// Every Rust file below `dir`, with its text.
fn sources(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                out.push((path, text));
            }
        }
    }
    out
}

#[test]
fn the_server_the_web_view_and_the_mcp_server_do_not_reach_into_the_command_line() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut read = 0;
    for front_end in ["serve", "web", "mcp"] {
        for (path, text) in sources(&src.join(front_end)) {
            read += 1;
            // `present` renders command results for every front end; `commands` is the CLI's.
            assert!(
                !text.contains("commands::"),
                "{} uses the command line's commands",
                path.display()
            );
        }
    }
    assert!(
        read >= 10,
        "the walk reads the front ends' sources ({read} files)"
    );
    // The check can see a use: the command line itself does use them.
    let cli = std::fs::read_to_string(src.join("cli.rs")).expect("cli.rs");
    assert!(cli.contains("commands::"));
}

#[test]
fn the_web_view_and_the_mcp_tools_do_not_reach_into_the_server() {
    // The server mounts the web view's router and serves the MCP tools; what they share with
    // it (the runtime, the listener, who may ask for what) is in `host`, so neither imports
    // the server, and the MCP tools do not import the web view.
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut read = 0;
    for (front_end, others) in [
        ("web", &["crate::serve"][..]),
        ("mcp", &["crate::serve", "crate::web"][..]),
    ] {
        for (path, text) in sources(&src.join(front_end)) {
            read += 1;
            for other in others {
                assert!(!text.contains(other), "{} uses {other}", path.display());
            }
        }
    }
    assert!(read >= 5, "the walk reads the sources ({read} files)");
    // The check can see a use: the server does mount the web view.
    let serve = std::fs::read_to_string(src.join("serve/mod.rs")).expect("serve/mod.rs");
    assert!(serve.contains("crate::web"));
}

/// The lines of a source file that are not its tests: those before its `#[cfg(test)]` module,
/// none for a file of tests (`tests.rs`).
fn lines_outside_tests(path: &std::path::Path, text: &str) -> usize {
    if path.file_name().is_some_and(|name| name == "tests.rs") {
        return 0;
    }
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .count()
}

/// A module over 800 lines of code does several things; each crate's sources stay under that,
/// tests apart, so a change reads one part at a time.
#[test]
fn no_source_file_is_over_800_lines_outside_its_tests() {
    const LIMIT: usize = 800;
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut read = 0;
    let mut over = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("the crates directory") {
        let src = entry.expect("an entry").path().join("src");
        if !src.is_dir() {
            continue;
        }
        for (path, text) in sources(&src) {
            read += 1;
            let lines = lines_outside_tests(&path, &text);
            if lines > LIMIT {
                over.push(format!("{} ({lines} lines)", path.display()));
            }
        }
    }
    assert!(
        read >= 100,
        "the walk reads every crate's sources ({read} files)"
    );
    assert!(
        over.is_empty(),
        "over {LIMIT} lines outside tests: {over:?}"
    );
    // The count can see a long file: the masker's tests are one, and count as tests.
    let tests = crates.join("ctxpack-core/src/mask/tests.rs");
    let text = std::fs::read_to_string(&tests).expect("the masker's tests");
    assert!(text.lines().count() > LIMIT);
    assert_eq!(lines_outside_tests(&tests, &text), 0);
    let module = crates.join("ctxpack-store/src/docs/vectors/mod.rs");
    let text = std::fs::read_to_string(&module).expect("the vector files' module");
    assert!(lines_outside_tests(&module, &text) < text.lines().count());
}

/// The module path of a source file below `src` (`db/mod.rs` and `db.rs` are both `db`).
fn module_of(relative: &std::path::Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// Which files each file takes names from, by its `crate::…` and `super::…` paths (tests
/// apart): a path names the file of its longest prefix that is a module.
fn imports(files: &BTreeMap<Vec<String>, String>) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let path = regex::Regex::new(r"\b(crate|super)((?:::[A-Za-z_0-9]+)+)").expect("a pattern");
    let group = regex::Regex::new(r"use (crate|super)((?:::[a-z_0-9]+)*)::\{([^;]*)\};")
        .expect("a pattern");
    let item = regex::Regex::new(r"[A-Za-z_0-9]+(?:::[A-Za-z_0-9]+)*").expect("a pattern");
    let target = |segments: Vec<String>| {
        (1..=segments.len())
            .rev()
            .map(|k| segments[..k].to_vec())
            .find(|prefix| files.contains_key(prefix))
    };
    let mut out = BTreeMap::new();
    for (module, text) in files {
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        // `crate::a::b` from the crate's root, `super::a` from this module's parent.
        let under = |root: &str, rest: &str| -> Vec<String> {
            let mut segments = if root == "crate" {
                Vec::new()
            } else {
                module[..module.len().saturating_sub(1)].to_vec()
            };
            segments.extend(
                rest.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            );
            segments
        };
        let mut named: Vec<Vec<String>> = path
            .captures_iter(code)
            .map(|c| under(&c[1], &c[2]))
            .collect();
        for c in group.captures_iter(code) {
            let prefix = under(&c[1], &c[2]);
            for m in item.find_iter(&c[3]) {
                let mut segments = prefix.clone();
                segments.extend(m.as_str().split("::").map(str::to_owned));
                named.push(segments);
            }
        }
        let targets: BTreeSet<Vec<String>> = named
            .into_iter()
            .map(|s| s.into_iter().filter(|p| p != "super").collect())
            .filter_map(target)
            .filter(|t| t != module)
            .collect();
        out.insert(module.clone(), targets);
    }
    out
}

/// The groups of files that reach each other through their imports (a file alone is none).
fn circles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<BTreeSet<Vec<String>>> {
    let reach = |from: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&Vec<String>> = graph.get(from).into_iter().flatten().collect();
        while let Some(next) = todo.pop() {
            if seen.insert(next.clone()) {
                todo.extend(graph.get(next).into_iter().flatten());
            }
        }
        seen
    };
    let reached: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<BTreeSet<Vec<String>>> = Vec::new();
    for (module, from) in &reached {
        let circle: BTreeSet<Vec<String>> = from
            .iter()
            .filter(|other| {
                reached
                    .get(other)
                    .is_some_and(|back| back.contains(*module))
            })
            .cloned()
            .collect();
        if !circle.is_empty() && !out.iter().any(|c| c.contains(*module)) {
            out.push(circle);
        }
    }
    out
}

/// Within each library crate, no module takes names from one that takes names from it,
/// directly or around a longer loop: each reads from the layer below it.
#[test]
fn no_library_crate_has_module_circles() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (mut read, mut edges) = (0, 0);
    for name in LIBRARIES {
        let src = crates.join(name).join("src");
        let files: BTreeMap<Vec<String>, String> = sources(&src)
            .into_iter()
            .map(|(path, text)| {
                let relative = path.strip_prefix(&src).expect("below src").to_owned();
                (module_of(&relative), text)
            })
            .collect();
        assert!(!files.is_empty(), "{name}: no sources");
        read += files.len();
        let graph = imports(&files);
        edges += graph.values().map(BTreeSet::len).sum::<usize>();
        assert_eq!(circles(&graph), Vec::new(), "{name} has module circles");
    }
    assert!(
        read >= 100,
        "the walk reads every library's sources ({read} files)"
    );
    assert!(
        edges >= read,
        "the imports are read ({edges} among {read} files)"
    );
    // The check sees a circle: two files that take names from each other, and a loop of three.
    let file = |name: &str, text: &str| (vec![name.to_owned()], text.to_owned());
    let files = BTreeMap::from([
        file("a", "use crate::b::B;\n"),
        file("b", "pub struct B;\nfn f() { crate::a::g() }\n"),
        file("c", "use crate::{d::D};\n"),
        file("d", "use crate::e::E;\n"),
        file("e", "use crate::c::C;\n#[cfg(test)]\nuse crate::a::A;\n"),
    ]);
    let found = circles(&imports(&files));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().any(|c| c.len() == 3));
}

/// Each library crate has one error type: its sources (tests apart) derive or implement
/// `std::error::Error` at most once.
#[test]
fn each_library_crate_has_one_error_type() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = BTreeMap::new();
    for name in LIBRARIES {
        let derives: Vec<String> = sources(&crates.join(name).join("src"))
            .into_iter()
            .filter(|(path, _)| !path.ends_with("tests.rs"))
            .flat_map(|(path, text)| {
                let code = text
                    .split("#[cfg(test)]")
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let count = code.matches("thiserror::Error").count()
                    + code.matches("impl std::error::Error for").count();
                std::iter::repeat_n(path.display().to_string(), count)
            })
            .collect();
        found.insert(*name, derives);
    }
    // The count sees an error type, derived (the store's) or implemented (the API's).
    assert_eq!(found["ctxpack-store"].len(), 1, "{found:?}");
    assert_eq!(found["ctxpack-api"].len(), 1, "{found:?}");
    for (name, derives) in &found {
        assert!(
            derives.len() <= 1,
            "{name} has {} error types: {derives:?}",
            derives.len()
        );
    }
}
