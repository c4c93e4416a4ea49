//! `ctxpack eval` on a small history built with `git`.

use serde_json::Value;

use crate::pack::{Fixture, json};

fn history() -> Fixture {
    let f = Fixture::new();
    f.write(
        "src/retry.rs",
        "pub fn retry_request(attempts: u32) -> u32 {\n    attempts\n}\n",
    );
    f.write(
        "src/budget.rs",
        "pub fn enforce_budget(cost: u64, left: u64) -> bool {\n    cost <= left\n}\n",
    );
    f.write(
        "src/render.rs",
        "pub fn render_markdown(text: &str) -> String {\n    text.to_owned()\n}\n",
    );
    f.write("README.md", "# demo\n");
    f.commit("Initial import of the demo project");
    // A task: a descriptive change to one existing source file.
    f.write(
        "src/retry.rs",
        "pub fn retry_request(attempts: u32) -> u32 {\n    attempts.min(5) // cap retries\n}\n",
    );
    f.commit(
        "Cap the number of request retries at five\n\nSigned-off-by: Dev <dev@example.invalid>",
    );
    // Not tasks: a typo fix, a bump, a test-only change, a new file, too many files.
    f.write(
        "src/render.rs",
        "pub fn render_markdown(text: &str) -> String {\n    text.to_owned() // render\n}\n",
    );
    f.commit("fix typo");
    f.write("README.md", "# demo 1.1\n");
    f.commit("Bump version to 1.1");
    f.write("tests/retry_test.rs", "#[test] fn t() {}\n");
    f.commit("Add a test for the retry cap");
    f.write("src/new_module.rs", "pub fn brand_new() {}\n");
    f.commit("Introduce a brand new module for later");
    for (i, p) in ["src/a.rs", "src/b.rs", "src/c.rs", "src/d.rs"]
        .iter()
        .enumerate()
    {
        f.write(p, &format!("pub fn f{i}() {{}}\n"));
    }
    f.commit("Add four helper modules at once");
    for (i, p) in ["src/a.rs", "src/b.rs", "src/c.rs", "src/d.rs"]
        .iter()
        .enumerate()
    {
        f.write(p, &format!("pub fn f{i}() {{ let _ = {i}; }}\n"));
    }
    f.commit("Touch all four helper modules together");
    // A task: two source files, with a link and an issue reference to strip.
    f.write(
        "src/budget.rs",
        "pub fn enforce_budget(cost: u64, left: u64) -> bool {\n    cost > 0 && cost <= left\n}\n",
    );
    f.write(
        "src/render.rs",
        "pub fn render_markdown(text: &str) -> String {\n    format!(\"{text}\\n\")\n}\n",
    );
    f.commit("Reject zero-cost hits when enforcing the budget (#12)\n\nSee https://example.invalid/issue/12");
    f
}

#[test]
fn history_mines_tasks_and_reports_every_ranker() {
    let f = history();
    let tasks_file = f.path().join("tasks.jsonl");
    let tasks_path = tasks_file.to_str().expect("UTF-8").to_owned();
    let report = json(&f.run(&[
        "eval",
        "history",
        "--commits",
        "10",
        "--budgets",
        "50,400",
        "--write-tasks",
        &tasks_path,
        "--format",
        "json",
    ]));
    let tasks: Vec<Value> = std::fs::read_to_string(&tasks_file)
        .expect("tasks written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a task per line"))
        .collect();
    let goals: Vec<&str> = tasks.iter().filter_map(|t| t["goal"].as_str()).collect();
    assert_eq!(
        goals,
        [
            "Reject zero-cost hits when enforcing the budget See",
            "Cap the number of request retries at five"
        ],
        "newest first; routine, test-only, new-file and four-file commits are not tasks"
    );
    assert_eq!(
        tasks[0]["gold"],
        serde_json::json!(["src/budget.rs", "src/render.rs"])
    );
    assert_eq!(tasks[1]["gold"], serde_json::json!(["src/retry.rs"]));
    let parent = f.git(&["rev-parse", "HEAD~1"]);
    assert_eq!(tasks[0]["at"], Value::String(parent));

    assert_eq!(report["tasks"], 2);
    let results = report["results"].as_array().expect("results");
    assert_eq!(results.len(), 6, "three rankers at two budgets");
    for r in results {
        for key in ["fileRecall", "hitRate", "mrr", "tokenPrecision"] {
            let v = r[key].as_f64().expect("a metric");
            assert!((0.0..=1.0).contains(&v), "{key} {v}");
        }
    }
    let ctxpack = results
        .iter()
        .find(|r| r["ranker"] == "ctxpack" && r["budget"] == 400)
        .expect("row");
    assert_eq!(ctxpack["hitRate"], 1.0, "{report}");

    // The written tasks evaluate the same way.
    let again = json(&f.run(&[
        "eval",
        "cases",
        &tasks_path,
        "--budgets",
        "50,400",
        "--format",
        "json",
    ]));
    assert_eq!(
        again["results"],
        report["results"]
            .clone()
            .as_array()
            .map(|rows| {
                Value::Array(
                    rows.iter()
                        .map(|r| {
                            let mut r = r.clone();
                            r["msPerPack"] = again["results"]
                                .as_array()
                                .expect("rows")
                                .iter()
                                .find(|x| x["ranker"] == r["ranker"] && x["budget"] == r["budget"])
                                .expect("same row")["msPerPack"]
                                .clone();
                            r
                        })
                        .collect(),
                )
            })
            .expect("rows")
    );
}

#[test]
fn bad_cases_are_typed_errors() {
    let f = history();
    let file = f.path().join("bad.jsonl");
    let path = file.to_str().expect("UTF-8");
    std::fs::write(&file, "{\"goal\": \"g\", \"at\": \"HEAD\"}\n").expect("write");
    let run = f.run(&["eval", "cases", path]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("bad.jsonl:1:"), "{}", run.stderr);
    assert_eq!(f.run(&["eval", "cases", "/nonexistent.jsonl"]).code, 3);
    assert_eq!(f.run(&["eval", "history", "--budgets", "0"]).code, 2);
    assert_eq!(f.run(&["eval", "history", "--baseline", "grep"]).code, 2);
}

#[test]
fn no_tasks_is_a_failure_not_a_table_of_zeros() {
    let f = crate::pack::Fixture::new();
    f.write("src/a.rs", "pub fn a() {}\n");
    f.commit("init");
    let run = f.run(&["eval", "history"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("no task found"), "{}", run.stderr);
    assert_eq!(f.run(&["eval", "history", "--commits", "0"]).code, 2);
}
