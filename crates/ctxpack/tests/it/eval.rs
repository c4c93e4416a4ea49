//! A smoke test of `ctxpack eval`'s text output and task files. Evaluation itself is tested in
//! process in `ctxpack-api` (`tests/it/eval.rs`).

use crate::pack::{Cli, Fixture};

#[test]
fn eval_prints_a_table_and_round_trips_its_tasks() {
    let f = Fixture::new();
    f.write(
        "src/retry.rs",
        "pub fn retry_request(attempts: u32) -> u32 {\n    attempts\n}\n",
    );
    f.write("README.md", "# demo\n");
    f.commit("Initial import of the demo project");
    f.write(
        "src/retry.rs",
        "pub fn retry_request(attempts: u32) -> u32 {\n    attempts.min(5) // cap retries\n}\n",
    );
    f.commit("Cap the number of request retries at five");
    f.write(
        "README.md",
        "# demo\n\nRequests are retried at most five times.\n",
    );
    f.commit("docs: explain how request retries are capped");
    let tasks = f.path().join("tasks.jsonl");
    let tasks = tasks.to_str().expect("UTF-8");

    let run = f.run(&[
        "eval",
        "history",
        "--budgets",
        "400",
        "--write-tasks",
        tasks,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("tasks: 1  selector: coverage  meter: o200k"),
        "{}",
        run.stdout
    );
    let rankers: Vec<&str> = lines[2..]
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(rankers, ["ctxpack", "bm25", "dump"], "{}", run.stdout);
    let written = std::fs::read_to_string(tasks).expect("the tasks were written");
    assert_eq!(written.lines().count(), 1, "{written}");

    let run = f.run(&[
        "eval",
        "cases",
        tasks,
        "--budgets",
        "400",
        "--baseline",
        "none",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("tasks: 1 "), "{}", run.stdout);
    assert_eq!(f.run(&["eval", "cases", "/nonexistent.jsonl"]).code, 3);
    assert_eq!(f.run(&["eval", "history", "--budgets", "0"]).code, 2);

    // Tasks about the documentation: the README change alone.
    let run = f.run(&["eval", "history", "--gold", "prose", "--budgets", "400"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("tasks: 1 "), "{}", run.stdout);
    let run = f.run(&["eval", "history", "--gold", "docs"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("expected code, prose or changelog"),
        "{}",
        run.stderr
    );
}
