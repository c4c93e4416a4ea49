//! Evaluation in process on a small history built with `git`: tasks mined from commits,
//! every ranker scored at every budget, tasks given as JSON Lines, typed refusals,
//! progress and cancellation.

use std::sync::{Arc, Mutex};

use ctxpack_api::{
    Control, Error, ErrorKind, EvalReport, EvalRequest, EvalTask, Gold, Progress, Workspace,
    parse_tasks,
};

use crate::api::fixture::{Fixture, Workspaces};

/// A history with two task commits among commits that are not tasks: routine messages, a
/// test-only change, a new file, and changes to four files at once.
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
    let helpers = ["src/a.rs", "src/b.rs", "src/c.rs", "src/d.rs"];
    for (i, p) in helpers.iter().enumerate() {
        f.write(p, format!("pub fn f{i}() {{}}\n"));
    }
    f.commit("Add four helper modules at once");
    for (i, p) in helpers.iter().enumerate() {
        f.write(p, format!("pub fn f{i}() {{ let _ = {i}; }}\n"));
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

/// A history with two documentation tasks among commits that are not: a change to prose and
/// code together (a code task), a change log, new pages, a typo fix, a change to the change
/// log beside the guide, a deleted source file beside the guide.
fn documentation_history() -> Fixture {
    let f = Fixture::new();
    f.write("src/lib.rs", "pub fn retry(n: u32) -> u32 {\n    n\n}\n");
    f.write("docs/guide.md", "# Guide\n\nRetries are unlimited.\n");
    f.write("README.md", "# demo\n");
    f.write("CHANGELOG.md", "# Changes\n");
    f.write("src/old.rs", "pub fn old() {}\n");
    f.commit("Initial import of the demo project");
    f.write(
        "docs/guide.md",
        "# Guide\n\nRetries are unlimited.\n\n## Budgets\n\nA hit must fit.\n",
    );
    f.commit("docs: explain how budgets are enforced");
    f.write(
        "src/lib.rs",
        "pub fn retry(n: u32) -> u32 {\n    n.min(5)\n}\n",
    );
    f.write("docs/guide.md", "# Guide\n\nRetries stop at five.\n");
    f.commit("Cap retries at five and say so in the guide");
    f.write(
        "CHANGELOG.md",
        "# Changes\n\n## 1.2\n\nRetries are capped.\n",
    );
    f.commit("Describe the 1.2 release in the change log");
    f.write("docs/tokens.md", "# Tokens\n");
    f.commit("Add a new page about token meters");
    f.write("docs/meters.md", "# Meters\n");
    f.write("docs/tokens.md", "# Tokens\n\nSee the meters.\n");
    f.commit("Move the meters to a page of their own");
    f.write("CHANGELOG.md", "# Changes\n\n## 1.3\n\nGuide rewritten.\n");
    f.write(
        "docs/guide.md",
        "# Guide\n\nRetries stop at five attempts.\n",
    );
    f.commit("Rewrite the retry section of the guide for 1.3");
    f.write("docs/guide.md", "# Guide\n\nRetries stop at five tries.\n");
    f.git(&["rm", "-q", "src/old.rs"]);
    f.commit("Describe retries in the guide and drop the old module");
    f.write("docs/guide.md", "# Guide\n\nRetries stop at 5.\n");
    f.commit("fix typo");
    f.write("README.md", "# demo\n\nSee the guide for configuration.\n");
    f.write(
        "docs/guide.md",
        "# Guide\n\nRetries stop at 5.\n\n## Configuration\n",
    );
    f.commit("Explain configuration in the readme and the guide");
    f
}

#[test]
fn prose_tasks_are_commits_that_change_documents_and_no_code() {
    let f = documentation_history();
    let workspace = f.workspace();
    let tasks = workspace.mine_tasks(10, 3000, Gold::Prose).expect("mined");
    let found: Vec<(&str, &[String])> = tasks
        .iter()
        .map(|t| (t.goal.as_str(), t.gold.as_slice()))
        .collect();
    assert_eq!(
        found,
        [
            (
                "Explain configuration in the readme and the guide",
                &["README.md".to_owned(), "docs/guide.md".to_owned()][..]
            ),
            (
                "docs: explain how budgets are enforced",
                &["docs/guide.md".to_owned()][..]
            ),
        ],
        "newest first; commits that change code, tests, a change log or the set of pages, or fix \
         a typo, are not documentation tasks"
    );
    // The commit that changed code and prose is a code task, its gold the code alone.
    let code = workspace.mine_tasks(10, 3000, Gold::Code).expect("mined");
    let found: Vec<(&str, &[String])> = code
        .iter()
        .map(|t| (t.goal.as_str(), t.gold.as_slice()))
        .collect();
    assert_eq!(
        found,
        [(
            "Cap retries at five and say so in the guide",
            &["src/lib.rs".to_owned()][..]
        )]
    );
    // The commit that changed the change log alone is the one change-log task; the one that
    // changed the guide beside it is about the guide.
    let logs = workspace
        .mine_tasks(10, 3000, Gold::ChangeLog)
        .expect("mined");
    let found: Vec<(&str, &[String])> = logs
        .iter()
        .map(|t| (t.goal.as_str(), t.gold.as_slice()))
        .collect();
    assert_eq!(
        found,
        [(
            "Describe the 1.2 release in the change log",
            &["CHANGELOG.md".to_owned()][..]
        )]
    );
    // A history without documentation tasks says what it looked for.
    let error = failure(
        history().workspace().mine_tasks(10, 3000, Gold::Prose),
        "no prose task",
    );
    assert_eq!(error.kind(), ErrorKind::NotFound);
    assert!(
        error
            .to_string()
            .contains("prose documents and no source file"),
        "{error}"
    );
}

/// An evaluation at `budgets` with every other option at its default.
fn at_budgets(budgets: &[u64]) -> EvalRequest {
    EvalRequest {
        budgets: budgets.to_vec(),
        ..EvalRequest::default()
    }
}

/// Runs an evaluation that must succeed.
fn eval(workspace: &Workspace, tasks: &[EvalTask], request: &EvalRequest) -> EvalReport {
    workspace
        .eval(tasks, request, &Control::new())
        .expect("the evaluation runs")
}

/// The report with every timing zeroed, to compare two runs.
fn without_timings(mut report: EvalReport) -> EvalReport {
    report.index_seconds.first = 0.0;
    report.index_seconds.median_after = 0.0;
    for row in &mut report.results {
        row.ms_per_pack = 0.0;
    }
    report
}

/// The error of `result`, which must have failed.
fn failure<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) -> Error {
    match result {
        Ok(value) => panic!("{what} succeeded: {value:?}"),
        Err(e) => e,
    }
}

#[test]
fn history_mines_tasks_and_reports_every_ranker() {
    let f = history();
    let workspace = f.workspace();
    let tasks = workspace
        .mine_tasks(10, 3000, Gold::Code)
        .expect("tasks are mined");
    let goals: Vec<&str> = tasks.iter().map(|t| t.goal.as_str()).collect();
    assert_eq!(
        goals,
        [
            "Reject zero-cost hits when enforcing the budget See",
            "Cap the number of request retries at five"
        ],
        "newest first; routine, test-only, new-file and four-file commits are not tasks"
    );
    assert_eq!(tasks[0].gold, ["src/budget.rs", "src/render.rs"]);
    assert_eq!(tasks[1].gold, ["src/retry.rs"]);
    // A task packs the commit's parent, where the change is still to be made.
    assert_eq!(tasks[0].at, f.git(&["rev-parse", "HEAD~1"]));
    assert_eq!(tasks[0].commit, Some(f.git(&["rev-parse", "HEAD"])));
    // At most as many as asked for.
    assert_eq!(
        workspace
            .mine_tasks(1, 3000, Gold::Code)
            .expect("mined")
            .len(),
        1
    );

    let report = eval(&workspace, &tasks, &at_budgets(&[50, 400]));
    assert_eq!(report.tasks, 2);
    let rows: Vec<(&str, u64)> = report
        .results
        .iter()
        .map(|r| (r.ranker.as_str(), r.budget))
        .collect();
    assert_eq!(
        rows,
        [
            ("ctxpack", 50),
            ("bm25", 50),
            ("dump", 50),
            ("ctxpack", 400),
            ("bm25", 400),
            ("dump", 400)
        ],
        "three rankers at two budgets, budgets outermost"
    );
    for r in &report.results {
        for (name, v) in [
            ("file_recall", r.file_recall),
            ("body_recall", r.body_recall),
            ("hit_rate", r.hit_rate),
            ("mrr", r.mrr),
            ("gold_share", r.gold_share),
        ] {
            assert!(
                (0.0..=1.0).contains(&v),
                "{} {}: {name} {v}",
                r.ranker,
                r.budget
            );
        }
    }
    let ctxpack = &report.results[3];
    assert_eq!(ctxpack.hit_rate, 1.0, "{report:?}");
    // The gold files are a few lines long: a pack that cites one shows all of it.
    assert_eq!(ctxpack.body_recall, ctxpack.file_recall, "{report:?}");
    // The JSON names every metric.
    let json = serde_json::to_value(&report).expect("a report serializes");
    for key in [
        "fileRecall",
        "bodyRecall",
        "hitRate",
        "mrr",
        "goldShare",
        "editRecall",
        "editHit",
        "msPerPack",
    ] {
        assert!(json["results"][0][key].is_number(), "{key}: {json}");
    }
    assert_eq!(json["selector"], "coverage");
    assert_eq!(json["meter"], "o200k");
    assert!(json["indexSeconds"]["first"].is_number(), "{json}");

    // Tasks written as JSON Lines read back the same, and evaluate the same way.
    let lines: String = tasks
        .iter()
        .map(|t| format!("{}\n", serde_json::to_string(t).expect("a task serializes")))
        .collect();
    let again = parse_tasks(&lines, "tasks.jsonl").expect("the written tasks parse");
    assert_eq!(again, tasks);
    let second = eval(&workspace, &again, &at_budgets(&[50, 400]));
    assert_eq!(without_timings(second), without_timings(report));
}

#[test]
fn rankers_and_ablations_are_chosen_by_the_request() {
    let f = history();
    let workspace = f.workspace();
    let tasks = workspace.mine_tasks(10, 3000, Gold::Code).expect("mined");
    let request = EvalRequest {
        baselines: vec!["none".into()],
        ablate: vec!["file-evidence".into(), "test-prior".into()],
        top_k: 5.into(),
        ..at_budgets(&[400])
    };
    let report = eval(&workspace, &tasks, &request);
    let rankers: Vec<&str> = report.results.iter().map(|r| r.ranker.as_str()).collect();
    assert_eq!(rankers, ["ctxpack"]);
    assert_eq!(report.ablate, ["file-evidence", "test-prior"]);
    // The path-boosted reference is a ranker of its own, beside plain BM25.
    let request = EvalRequest {
        baselines: vec!["bm25".into(), "bm25-path".into()],
        ..at_budgets(&[400])
    };
    let report = eval(&workspace, &tasks, &request);
    let rankers: Vec<&str> = report.results.iter().map(|r| r.ranker.as_str()).collect();
    assert_eq!(rankers, ["ctxpack", "bm25", "bm25-path"]);
    assert!(
        report.results.iter().all(|r| r.file_recall > 0.0),
        "{report:?}"
    );
}

#[test]
fn bad_requests_are_typed_errors() {
    let f = history();
    let workspace = f.workspace();
    let tasks = workspace.mine_tasks(10, 3000, Gold::Code).expect("mined");
    // (request, the field at fault)
    let cases: Vec<(EvalRequest, &str)> = vec![
        (at_budgets(&[0]), "budgets"),
        (at_budgets(&[400, 1 << 53]), "budgets"),
        (
            EvalRequest {
                baselines: vec!["grep".into()],
                ..EvalRequest::default()
            },
            "baselines",
        ),
        (
            EvalRequest {
                ablate: vec!["everything".into()],
                ..EvalRequest::default()
            },
            "ablate",
        ),
        (
            EvalRequest {
                top_k: 0.into(),
                ..EvalRequest::default()
            },
            "top_k",
        ),
    ];
    for (request, field) in cases {
        let error = failure(workspace.eval(&tasks, &request, &Control::new()), field);
        assert_eq!(
            error.kind(),
            ErrorKind::InvalidInput,
            "{request:?}: {error}"
        );
        assert_eq!(error.field(), Some(field), "{request:?}");
    }
    // A task at a commit that is not there.
    let stray = parse_tasks(
        r#"{"goal": "g", "at": "0000000", "gold": ["src/a.rs"]}"#,
        "stray.jsonl",
    )
    .expect("parses");
    let error = failure(
        workspace.eval(&stray, &at_budgets(&[400]), &Control::new()),
        "an unknown commit",
    );
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
}

#[test]
fn task_lines_are_checked() {
    // (input, where the error points, what it says)
    let cases = [
        (
            "{\"goal\": \"g\", \"at\": \"HEAD\"}\n",
            "bad.jsonl:1:",
            "not a task",
        ),
        (
            "\n{\"goal\": \"g\", \"at\": \"HEAD\", \"gold\": [\"a.rs\"]}\nnope\n",
            "bad.jsonl:3:",
            "not a task",
        ),
        (
            "{\"goal\": \"  \", \"at\": \"HEAD\", \"gold\": [\"a.rs\"]}\n",
            "bad.jsonl:1:",
            "needs a goal",
        ),
        (
            "{\"goal\": \"g\", \"at\": \"HEAD\", \"gold\": []}\n",
            "bad.jsonl:1:",
            "at least one gold path",
        ),
    ];
    for (input, place, says) in cases {
        let error = failure(parse_tasks(input, "bad.jsonl"), input);
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{input}");
        assert!(error.message().contains(place), "{input}: {error}");
        assert!(error.message().contains(says), "{input}: {error}");
    }
    let tasks = parse_tasks(
        "\n{\"goal\": \"g\", \"at\": \"HEAD\", \"gold\": [\"a.rs\"]}\n\n",
        "ok.jsonl",
    )
    .expect("blank lines are skipped");
    assert_eq!(
        tasks,
        [EvalTask {
            goal: "g".into(),
            at: "HEAD".into(),
            gold: vec!["a.rs".into()],
            commit: None,
        }]
    );
}

#[test]
fn no_tasks_is_a_failure_not_a_table_of_zeros() {
    let f = Fixture::new();
    f.write("src/a.rs", "pub fn a() {}\n");
    f.commit("init");
    let workspace = f.workspace();
    let error = failure(workspace.mine_tasks(40, 3000, Gold::Code), "no task commit");
    assert_eq!(error.kind(), ErrorKind::NotFound, "{error}");
    assert!(error.message().contains("no task found"), "{error}");
    for (commits, scan) in [(0, 3000), (40, 0)] {
        let error = failure(workspace.mine_tasks(commits, scan, Gold::Code), "zero");
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{commits} {scan}");
    }
}

#[test]
fn eval_reports_tasks_and_stops_when_cancelled() {
    let f = history();
    let workspace = f.workspace();
    let tasks = workspace.mine_tasks(10, 3000, Gold::Code).expect("mined");
    let request = at_budgets(&[400]);

    // Each task is announced before it is evaluated.
    let seen = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = seen.clone();
    let control = Control::new().with_progress(move |p: &Progress| {
        if p.phase == "tasks" {
            sink.lock().expect("no panic while held").push(*p);
        }
    });
    workspace
        .eval(&tasks, &request, &control)
        .expect("the evaluation runs");
    let announced: Vec<(u64, Option<u64>)> = seen
        .lock()
        .expect("the run is over")
        .iter()
        .map(|p| (p.done, p.total))
        .collect();
    assert!(
        announced.starts_with(&[(0, Some(2)), (1, Some(2))]),
        "{announced:?}"
    );

    // Cancelled at the first task: nothing is evaluated.
    let f = history();
    let workspace = f.workspace();
    let tasks = workspace.mine_tasks(10, 3000, Gold::Code).expect("mined");
    let control = Control::new();
    let canceller = control.canceller();
    let control = control.with_progress(move |p: &Progress| {
        if p.phase == "tasks" {
            canceller.cancel();
        }
    });
    let error = failure(workspace.eval(&tasks, &request, &control), "cancelled");
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    assert!(
        !workspace.status().expect("status").store_exists,
        "nothing was indexed"
    );
    // Already cancelled before it starts: the same.
    let error = failure(workspace.eval(&tasks, &request, &control), "cancelled");
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
}
