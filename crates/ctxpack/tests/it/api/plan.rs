//! Context plans run in process against real git repositories: sources, pins, exclude, `+=`
//! versions, the trace, the ledger chain, masking, and the refusals (`run` without
//! permission, a time limit out of range, a command that hangs, a path outside the
//! repository).

use std::path::Path;

use ctxpack_api::plan::{Event, PlanRun, PlanRunRequest, PlanSource, StepKind, check_plan};
use ctxpack_api::{
    Access, ArtifactAddRequest, ArtifactScope, Control, DropReason, Error, ErrorKind, Format,
    IndexRequest, Meter, Pack, RenderOptions, Selector, Tier, View, Warning, Workspace,
    docs::InsertRequest, pack_json,
};
use serde_json::Value;

use crate::api::fixture::{CONFIG, Fixture, Workspaces, project};

/// A CI log stored as the artifact `ci-log-17`.
const CI_LOG: &str =
    "test budget::overflow ... FAILED\nthread panicked: budget exceeded by 12 tokens\n";

/// The secret in `config.env`, which must never reach a pack or the ledger unmasked.
const SECRET: &str = "AKIAIOSFODNN7EXAMPLE";

/// Reads, a query, a text and an artifact; a pin, an exclude, and a `+=` that makes a second
/// version.
const PLAN: &str = r#"# Why does the budget check fail? Evidence for a reviewer.
flow explain-budget
  src = read("src/budget.rs")
  readme = read("README.md", lines: 1..1)
  env = read("config.env")
  hits = query("budget enforcement", top: 3)
  note = text("why is the budget exceeded?")
  ctx debug
    purpose "explain the budget check"
    budget 800
    include note, hits, readme, env
    exclude env
    pin src
  emit debug
  log = artifact("ci-log-17")
  debug += log
  emit debug
"#;

/// How a run records its versions in the ledger when a test asks it to.
const RECORD: RenderOptions = RenderOptions {
    format: Format::Json,
    view: View::Full,
    pretty: false,
};

/// A plan of one ctx `d` (budget 1000) that includes `members`, bound by `bindings` (one
/// `name = source` per line).
fn one_ctx_plan(bindings: &[&str], members: &str) -> String {
    let mut plan = String::from("flow f\n");
    for binding in bindings {
        plan.push_str(&format!("  {binding}\n"));
    }
    plan.push_str(&format!(
        "  ctx d\n    purpose \"p\"\n    budget 1000\n    include {members}\n  emit d\n"
    ));
    plan
}

/// Runs `text` (named `plan.ctx`) over `workspace`.
fn run_plan(
    workspace: &Workspace,
    text: &str,
    request: &PlanRunRequest,
    record: Option<&RenderOptions>,
) -> Result<PlanRun, Error> {
    workspace.run_plan(
        &PlanSource {
            text,
            name: "plan.ctx",
        },
        request,
        record,
    )
}

/// A request that lets `run(…)` start commands, with the default limits.
fn allow_run() -> PlanRunRequest {
    PlanRunRequest {
        allow_run: true,
        ..PlanRunRequest::default()
    }
}

/// The pack of the `n`-th emitted version.
fn emitted(run: &PlanRun, n: usize) -> &Pack {
    &run.outcome.versions[run.outcome.emitted[n]].built.pack
}

/// The citations of a pack's hits, in order.
fn citations(pack: &Pack) -> Vec<&str> {
    pack.hits
        .iter()
        .map(|h| h.candidate.citation.as_str())
        .collect()
}

/// The project, indexed at HEAD, with the CI log stored as the evidence artifact `ci-log-17`.
fn indexed_project_with_log() -> (Fixture, String, Workspace) {
    let (f, sha) = project();
    let workspace = f.workspace();
    workspace
        .index(&IndexRequest::default(), &Control::new())
        .expect("HEAD indexes");
    let id = workspace
        .add_artifact(
            &ArtifactAddRequest {
                id: Some("ci-log-17".into()),
                title: Some("CI run 17".into()),
                name: Some("ci.log".into()),
                ..ArtifactAddRequest::new(ArtifactScope::Evidence)
            },
            CI_LOG.as_bytes(),
        )
        .expect("the artifact is stored");
    assert_eq!(id, "ci-log-17");
    (f, sha, workspace)
}

/// Every file under `dir` (the ledger's records and its texts), read as (lossy) text,
/// concatenated.
fn all_text_under(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).expect("the directory lists") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.push_str(&all_text_under(&path));
        } else {
            out.push_str(&String::from_utf8_lossy(
                &std::fs::read(&path).expect("the file reads"),
            ));
        }
    }
    out
}

#[test]
fn a_plan_runs_end_to_end_and_every_version_is_in_the_ledger() {
    let (f, sha, workspace) = indexed_project_with_log();
    let run = run_plan(&workspace, PLAN, &PlanRunRequest::default(), Some(&RECORD))
        .expect("the plan runs");
    assert_eq!(run.flow.as_deref(), Some("explain-budget"));
    assert_eq!(run.warnings, "", "nothing is unbound");
    assert!(run.ledger_errors.is_empty(), "{:?}", run.ledger_errors);
    let versions: Vec<(&str, u32, Option<usize>)> = run
        .outcome
        .versions
        .iter()
        .map(|v| (v.ctx.name(), v.number, v.parent))
        .collect();
    assert_eq!(versions, [("debug", 1, None), ("debug", 2, Some(0))]);
    assert_eq!(run.outcome.emitted, [0, 1]);

    // Version 1: the pinned read first, cited by member, with its file span and commit.
    let v1 = emitted(&run, 0);
    assert_eq!(v1.goal, "explain the budget check");
    assert_eq!(v1.meter, Meter::Chars);
    assert_eq!(v1.selector, Selector::Skip);
    let first = &v1.hits[0].candidate;
    assert_eq!(first.citation.as_str(), "plan:debug/src");
    assert_eq!(first.tier, Tier::Pinned);
    assert_eq!(
        first.location.as_ref().map(|l| l.path.as_str()),
        Some("src/budget.rs")
    );
    assert_eq!(
        first.title.as_deref(),
        Some(format!("src/budget.rs#L1-L6@{}", &sha[..7]).as_str())
    );
    let cited = citations(v1);
    assert_eq!(cited[1], "plan:debug/note");
    assert!(
        cited
            .iter()
            .any(|c| c.starts_with("src/budget.rs#L") && c.ends_with(&sha[..7])),
        "query hits keep their own citations: {cited:?}"
    );
    assert!(v1.used <= 800);
    assert!(
        v1.warnings.is_empty(),
        "the untracked store leaves the worktree clean: {:?}",
        v1.warnings
    );
    // The excluded member is reported, never packed: the secret in it goes nowhere.
    assert!(
        v1.dropped
            .iter()
            .any(|d| d.citation.as_str() == "plan:debug/env" && d.reason == DropReason::Excluded),
        "{:?}",
        v1.dropped
    );
    for version in &run.outcome.versions {
        let rendered = pack_json(&version.built.pack, View::Full).to_string();
        assert!(!rendered.contains(SECRET), "{rendered}");
    }
    for event in &run.outcome.trace {
        assert!(!event.to_json().to_string().contains(SECRET), "{event}");
    }

    // Version 2 adds the artifact; version 1 is unchanged.
    let v2 = emitted(&run, 1);
    assert!(
        citations(v2).contains(&"plan:debug/log"),
        "{:?}",
        citations(v2)
    );
    assert_eq!(v2.artifacts, ["ci-log-17"]);
    assert!(!citations(v1).contains(&"plan:debug/log"));

    // The trace, in order.
    let events: Vec<&str> = run
        .outcome
        .trace
        .iter()
        .map(Event::name)
        .filter(|e| *e != "ctx_shrunk")
        .collect();
    assert_eq!(
        events,
        [
            "bind",
            "bind",
            "bind",
            "bind",
            "bind",
            "ctx_built",
            "emit",
            "bind",
            "version_appended",
            "emit"
        ]
    );
    let shrunk: Vec<Value> = run
        .outcome
        .trace
        .iter()
        .filter(|e| e.name() == "ctx_shrunk")
        .map(Event::to_json)
        .collect();
    assert!(
        shrunk
            .iter()
            .any(|e| e["member"] == "env" && e["reason"] == "excluded"),
        "{shrunk:?}"
    );

    // The ledger: both versions, the second linked to the first; `show` replays each.
    let ids: Vec<&str> = run
        .ids
        .iter()
        .map(|id| id.as_deref().expect("every version is recorded"))
        .collect();
    let log = workspace
        .log(ctxpack_api::MAX_LOG_LIMIT)
        .expect("the ledger reads");
    let plan_entries: Vec<_> = log.entries.iter().filter(|e| e.surface == "plan").collect();
    assert_eq!(plan_entries.len(), 2);
    let (newest, oldest) = (plan_entries[0], plan_entries[1]);
    assert_eq!((oldest.id.as_str(), newest.id.as_str()), (ids[0], ids[1]));
    assert_eq!(oldest.parent, None);
    assert_eq!(newest.parent.as_deref(), Some(ids[0]));
    assert_eq!(newest.goal, "explain the budget check");
    for (version, id) in run.outcome.versions.iter().zip(&ids) {
        let shown = workspace.show(&id[..12]).expect("the record replays");
        assert_eq!(shown.rendering, RECORD);
        assert_eq!(
            pack_json(&shown.pack, View::Full),
            pack_json(&version.built.pack, View::Full),
            "show {id} replays what was emitted"
        );
    }
    assert!(!all_text_under(&f.store().join("ledger")).contains(SECRET));
}

#[test]
fn without_a_rendering_nothing_is_recorded() {
    let (f, _, workspace) = indexed_project_with_log();
    let run = run_plan(&workspace, PLAN, &PlanRunRequest::default(), None).expect("runs");
    assert_eq!(run.ids, [None, None]);
    assert!(run.ledger_errors.is_empty(), "{:?}", run.ledger_errors);
    assert!(
        workspace
            .log(ctxpack_api::MAX_LOG_LIMIT)
            .expect("reads")
            .entries
            .is_empty()
    );
    assert!(!f.store().join("ledger/packs.jsonl").exists());

    // A read-only workspace records nothing even when asked.
    let read_only = f.workspace_with(Access::ReadOnly, None);
    let run = run_plan(&read_only, PLAN, &PlanRunRequest::default(), Some(&RECORD))
        .expect("a read-only workspace runs plans");
    assert_eq!(run.ids, [None, None]);
    assert!(!f.store().join("ledger/packs.jsonl").exists());
}

#[test]
fn check_plan_resolves_without_running_anything() {
    let checked = check_plan(&PlanSource {
        text: PLAN,
        name: "plan.ctx",
    })
    .expect("the plan checks");
    assert_eq!(
        checked.checked.program.flow.as_deref(),
        Some("explain-budget")
    );
    type Kind = fn(&StepKind) -> bool;
    let counts: [(&str, Kind, usize); 4] = [
        ("bindings", |k| matches!(k, StepKind::Bind { .. }), 6),
        ("ctx blocks", |k| matches!(k, StepKind::Ctx(_)), 1),
        ("appends", |k| matches!(k, StepKind::Append { .. }), 1),
        ("emits", |k| matches!(k, StepKind::Emit { .. }), 2),
    ];
    for (what, kind, expected) in counts {
        assert_eq!(checked.count(kind), expected, "{what}");
    }
    assert_eq!(checked.warnings, "");

    let error = check_plan(&PlanSource {
        text: "flow f\n  spec = text(\"s\")\n  ctx d\n    purpose \"p\"\n    budget 0\n    include spce\n  emit spec\n",
        name: "bad.ctx",
    })
    .expect_err("three errors");
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    let message = error.message();
    assert!(
        message.starts_with("a 0 budget is rejected\n --> bad.ctx:5:12\n"),
        "{message}"
    );
    for part in [
        "undefined name `spce`",
        "= help: did you mean `spec`?",
        "only a ctx can be emitted, but `spec` is a `text` value",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
}

#[test]
fn compile_warnings_and_unbound_names_are_reported_with_the_run() {
    let (f, _) = project();
    // `late` is bound only after the ctx that includes it: a warning, and unbound there.
    let text = "flow f\n  ctx d\n    purpose \"p\"\n    budget 100\n    include late\n  late = text(\"x\")\n  emit d\n";
    let checked = check_plan(&PlanSource {
        text,
        name: "plan.ctx",
    })
    .expect("a warning is not an error");
    assert!(
        checked.warnings.starts_with("warning: "),
        "{}",
        checked.warnings
    );
    assert!(
        checked.warnings.contains("plan.ctx:5:"),
        "{}",
        checked.warnings
    );

    let run = run_plan(&f.workspace(), text, &PlanRunRequest::default(), None).expect("runs");
    assert!(
        run.warnings.starts_with(&checked.warnings),
        "the compile warnings come first: {}",
        run.warnings
    );
    let pack = emitted(&run, 0);
    assert!(pack.hits.is_empty());
    assert_eq!(pack.dropped[0].citation.as_str(), "plan:d/late");
    assert_eq!(pack.dropped[0].reason, DropReason::Unbound);
}

#[test]
fn run_is_refused_without_allow_run_and_nothing_is_recorded() {
    let (f, _) = project();
    let workspace = f.workspace();
    let plan = one_ctx_plan(&["out = run(\"touch ran\")"], "out");
    let error = run_plan(&workspace, &plan, &PlanRunRequest::default(), Some(&RECORD))
        .expect_err("commands need allow_run");
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    assert!(
        error
            .message()
            .starts_with("`run` is refused: commands are not allowed"),
        "{}",
        error.message()
    );
    assert!(!f.path().join("ran").exists(), "the command did not start");
    assert!(!f.store().join("ledger/packs.jsonl").exists());

    let run = run_plan(&workspace, &plan, &allow_run(), Some(&RECORD)).expect("allowed");
    assert!(f.path().join("ran").exists(), "the command ran");
    assert!(run.ids[0].is_some());
}

#[test]
fn a_run_timeout_out_of_range_is_refused_before_anything_runs() {
    let (f, _) = project();
    let workspace = f.workspace();
    let plan = one_ctx_plan(&["out = run(\"touch ran\")"], "out");
    for secs in [0, PlanRunRequest::MAX_TIMEOUT_SECS + 1, u64::MAX] {
        let request = PlanRunRequest {
            run_timeout_secs: secs,
            ..allow_run()
        };
        let error = run_plan(&workspace, &plan, &request, Some(&RECORD)).expect_err("out of range");
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{secs}");
        assert_eq!(error.field(), Some("run_timeout_secs"), "{secs}");
        assert!(
            error.message().contains(&secs.to_string()),
            "{}",
            error.message()
        );
        assert!(!f.path().join("ran").exists(), "{secs}: nothing ran");
        assert!(!f.store().join("ledger/packs.jsonl").exists(), "{secs}");
    }
    // Both ends of the range are accepted.
    for secs in [1, PlanRunRequest::MAX_TIMEOUT_SECS] {
        let request = PlanRunRequest {
            run_timeout_secs: secs,
            ..allow_run()
        };
        run_plan(&workspace, &plan, &request, None).expect("in range");
        std::fs::remove_file(f.path().join("ran")).expect("the command ran");
    }
}

#[test]
fn run_output_has_both_streams_the_exit_status_and_its_limit() {
    let (f, _) = project();
    let workspace = f.workspace();
    // (command, output limit, text, title)
    let cases: &[(&str, Option<usize>, &str, &str)] = &[
        ("echo hello", None, "hello\n", "run: echo hello (exit 0)"),
        (
            "sh -c 'echo out; echo err >&2; exit 2'",
            None,
            "out\nerr\n[exit 2]\n",
            "run: sh -c 'echo out; echo err >&2; exit 2' (exit 2)",
        ),
        (
            "printf abcdefghij",
            Some(4),
            "abcd\n[output truncated: 10 bytes, the first 4 kept]\n",
            "run: printf abcdefghij (exit 0)",
        ),
        (
            "sh -c 'printf abcdef; exit 1'",
            Some(3),
            "abc\n[output truncated: 6 bytes, the first 3 kept]\n[exit 1]\n",
            "run: sh -c 'printf abcdef; exit 1' (exit 1)",
        ),
    ];
    for &(command, limit, text, title) in cases {
        let plan = one_ctx_plan(&[&format!("out = run({command:?})")], "out");
        let request = PlanRunRequest {
            run_max_output: limit.unwrap_or(PlanRunRequest::default().run_max_output),
            ..allow_run()
        };
        let run = run_plan(&workspace, &plan, &request, None).expect(command);
        let hit = &emitted(&run, 0).hits[0].candidate;
        assert_eq!(hit.text, text, "{command}");
        assert_eq!(hit.title.as_deref(), Some(title), "{command}");
        assert_eq!(hit.citation.as_str(), "plan:d/out", "{command}");
    }
}

#[test]
fn a_hanging_run_is_killed_at_its_time_limit_and_reported() {
    let (f, _) = project();
    let plan = one_ctx_plan(
        &["slow = run(\"sleep 30\")", "note = text(\"n\")"],
        "slow, note",
    );
    let request = PlanRunRequest {
        run_timeout_secs: 1,
        ..allow_run()
    };
    let run = run_plan(&f.workspace(), &plan, &request, None).expect("a time-out is not fatal");
    assert!(
        run.warnings.contains(
            "`slow` is unbound and contributes nothing: `sleep 30` was killed at its time limit of 1 s"
        ),
        "{}",
        run.warnings
    );
    let bind = run.outcome.trace[0].to_json();
    assert_eq!(bind["event"], "bind");
    assert_eq!(bind["name"], "slow");
    assert_eq!(bind["ok"], false);
    let pack = emitted(&run, 0);
    assert_eq!(citations(pack), ["plan:d/note"]);
    assert_eq!(pack.dropped[0].citation.as_str(), "plan:d/slow");
    assert_eq!(pack.dropped[0].reason, DropReason::Unbound);
}

/// Processes a `run` command starts that try to outlive it: how each is started (a line of
/// shell that makes it write its own pid to `$1`), and how the command ends: at the time
/// limit (`sleep 30`) or by exiting on its own. Each must be gone once the run returns.
#[cfg(target_os = "linux")]
const ESCAPES: &[(&str, &str, &str)] = &[
    // Its own session (and so its own process group): the group kill cannot reach it.
    (
        "a setsid grandchild",
        "setsid sh -c 'echo $$ > \"$1\"; exec sleep 300' sh \"$1\" &",
        "sleep 30",
    ),
    // Its own session, and orphaned: its parent has exited long before the time limit.
    (
        "an orphaned setsid grandchild",
        "(setsid sh -c 'echo $$ > \"$1\"; exec sleep 300' sh \"$1\" &)",
        "sleep 30",
    ),
    // Its own session, and an empty environment (no trace of the run in it), under a parent
    // that is still there.
    (
        "a setsid grandchild with no environment",
        "env -i setsid sh -c 'echo $$ > \"$1\"; exec sleep 300' sh \"$1\" &",
        "sleep 30",
    ),
    // A daemon left behind by a command that succeeds.
    (
        "a daemon of a command that exits",
        "(setsid sh -c 'echo $$ > \"$1\"; exec sleep 300' sh \"$1\" &)",
        "exit 0",
    ),
];

#[cfg(target_os = "linux")]
#[test]
fn no_process_a_run_started_outlives_it() {
    let (f, _) = project();
    let workspace = f.workspace();
    let outside = tempfile::tempdir().expect("tempdir");
    // The cases are independent runs of their own (most wait out the time limit): at once.
    std::thread::scope(|scope| {
        for (n, escape) in ESCAPES.iter().enumerate() {
            let (workspace, outside) = (&workspace, outside.path());
            scope.spawn(move || escape_case(workspace, outside, n, escape));
        }
    });
}

/// Runs escape case `n` and checks that its grandchild is gone.
fn escape_case(workspace: &Workspace, outside: &Path, n: usize, escape: &(&str, &str, &str)) {
    let &(case, start, end) = escape;
    let path = outside.join(format!("escape{n}.sh"));
    let pid_file = outside.join(format!("escape{n}.pid"));
    // The command ends only once its descendant has said who it is.
    let script = format!("{start}\nwhile [ ! -s \"$1\" ]; do sleep 0.01; done\n{end}\n");
    std::fs::write(&path, script).expect("write the script");
    let argv = serde_json::json!(["sh", path, pid_file]);
    let plan = one_ctx_plan(&[&format!("out = run({argv})")], "out");
    let request = PlanRunRequest {
        run_timeout_secs: 1,
        ..allow_run()
    };
    let run = run_plan(workspace, &plan, &request, None).expect("a time-out is not fatal");
    let timed_out = run.warnings.contains("was killed at its time limit of 1 s");
    assert_eq!(timed_out, end == "sleep 30", "{case}: {}", run.warnings);
    let pid = std::fs::read_to_string(&pid_file).expect("the script recorded its grandchild");
    let pid = pid.trim();
    assert!(!pid.is_empty(), "{case}");
    // Gone, not even a zombie: it was killed and reaped.
    let alive = Path::new("/proc").join(pid).exists();
    if alive {
        // Not left behind by a failing test either.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", pid])
            .status();
    }
    assert!(!alive, "{case}: process {pid} outlived the run");
}

#[test]
fn paths_outside_the_repository_are_refused() {
    let (f, _) = project();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/hostname", f.path().join("escape")).expect("symlink");
    // A link a cloned repository can carry: it stays inside the root but leads into `.git`.
    #[cfg(unix)]
    std::os::unix::fs::symlink(".git/config", f.path().join("gitcfg")).expect("symlink");
    let outside = tempfile::tempdir().expect("tempdir");
    let outside_store = outside.path().join("app.ctxpack");
    Workspace::for_store(&outside_store, Access::ReadWrite)
        .expect("a store workspace")
        .create_store(false)
        .expect("the store is created");
    let outside_store = format!(
        "docs({:?}, \"tickets\", \"text\", \"budget\")",
        outside_store.to_str().expect("UTF-8 temp path")
    );
    // (source, what the refusal says)
    let mut cases: Vec<(&str, &[&str])> = vec![
        (
            "read(\"../../etc/passwd\")",
            &[
                "path `../../etc/passwd` is outside the repository",
                "it climbs above the repository root",
            ],
        ),
        (
            "read(\"/etc/passwd\")",
            &[
                "path `/etc/passwd` is outside the repository",
                "absolute paths are refused",
            ],
        ),
        (
            "read(\".git/config\", worktree: true)",
            &["`.git/config` is inside the git directory"],
        ),
        (&outside_store, &["is outside the repository"]),
    ];
    if cfg!(unix) {
        // A symbolic link in the worktree that leads out is refused too.
        cases.push((
            "read(\"escape\", worktree: true)",
            &["`escape` resolves outside the repository"],
        ));
        cases.push((
            "read(\"gitcfg\", worktree: true)",
            &["`gitcfg` resolves inside the git directory"],
        ));
    }
    let workspace = f.workspace();
    for (source, refusal) in cases {
        let plan = one_ctx_plan(&[&format!("secret = {source}")], "secret");
        let error = run_plan(&workspace, &plan, &PlanRunRequest::default(), Some(&RECORD))
            .expect_err(source);
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{source}");
        let message = error.message();
        for part in refusal {
            assert!(message.contains(part), "{source}: {part}: {message}");
        }
        assert!(message.contains(" --> plan.ctx:2:"), "{source}: {message}");
        assert!(message.contains("^^^"), "{source}: a caret: {message}");
    }
    assert!(!f.store().join("ledger/packs.jsonl").exists());
}

#[test]
fn reads_come_from_the_commit_unless_the_worktree_is_asked_for() {
    let (f, sha) = project();
    f.write("src/budget.rs", "pub fn uncommitted() {}\n");
    let plan = one_ctx_plan(
        &[
            "committed = read(\"src/budget.rs\", lines: 4..4)",
            "live = read(\"src/budget.rs\", worktree: true)",
            "gone = read(\"src/missing.rs\")",
        ],
        "committed, live, gone",
    );
    let run =
        run_plan(&f.workspace(), &plan, &PlanRunRequest::default(), None).expect("the plan runs");
    assert!(
        run.warnings.contains(&format!(
            "`gone` is unbound and contributes nothing: no file `src/missing.rs` at {}",
            &sha[..7]
        )),
        "{}",
        run.warnings
    );
    let pack = emitted(&run, 0);
    let hits: Vec<(&str, &str, Option<u32>, Option<&str>)> = pack
        .hits
        .iter()
        .map(|h| {
            let c = &h.candidate;
            (
                c.citation.as_str(),
                c.text.as_str(),
                c.location.as_ref().map(|l| l.start_line),
                c.title.as_deref(),
            )
        })
        .collect();
    let committed_title = format!("src/budget.rs#L4-L4@{}", &sha[..7]);
    assert_eq!(
        hits,
        [
            (
                "plan:d/committed",
                "pub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n",
                Some(4),
                Some(committed_title.as_str()),
            ),
            (
                "plan:d/live",
                "pub fn uncommitted() {}\n",
                Some(1),
                Some("src/budget.rs#L1-L1 (worktree)"),
            ),
        ]
    );
    assert!(
        pack.warnings.contains(&Warning::DirtyWorktree),
        "{:?}",
        pack.warnings
    );
    assert!(
        pack.warnings
            .iter()
            .any(|w| w.to_string().contains("member `gone` of `d` is unbound")),
        "{:?}",
        pack.warnings
    );
    assert!(!f.store().join("ledger/packs.jsonl").exists());
}

#[test]
fn a_commit_can_be_named_and_a_clean_worktree_warns_of_nothing() {
    let (f, first) = project();
    f.write("src/budget.rs", "pub fn second() {}\n");
    f.commit("second");
    let plan = one_ctx_plan(
        &[
            &format!(
                "old = read(\"src/budget.rs\", at: \"{}\", lines: 4..4)",
                &first[..12]
            ),
            "new = read(\"src/budget.rs\")",
        ],
        "old, new",
    );
    let run = run_plan(&f.workspace(), &plan, &PlanRunRequest::default(), None).expect("runs");
    let pack = emitted(&run, 0);
    let texts: Vec<&str> = pack
        .hits
        .iter()
        .map(|h| h.candidate.text.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "pub fn enforce_budget(remaining: u64, cost: u64) -> bool {\n",
            "pub fn second() {}\n"
        ]
    );
    assert!(pack.warnings.is_empty(), "{:?}", pack.warnings);
}

#[test]
fn included_secrets_are_masked_in_the_pack_and_the_ledger() {
    let (f, _) = project();
    let workspace = f.workspace();
    let plan = one_ctx_plan(
        &[
            "env = read(\"config.env\")",
            "out = run(\"cat config.env\")",
        ],
        "env, out",
    );
    let run = run_plan(&workspace, &plan, &allow_run(), Some(&RECORD)).expect("runs");
    let pack = emitted(&run, 0);
    assert_eq!(citations(pack), ["plan:d/env", "plan:d/out"]);
    for hit in &pack.hits {
        let text = &hit.candidate.text;
        assert!(!text.contains(SECRET), "{text}");
        assert!(
            text.contains("region = eu-west-1"),
            "the rest is kept: {text}"
        );
    }
    assert_eq!(pack.redactions.total(), 2, "{:?}", pack.redactions);
    assert!(CONFIG.contains(SECRET), "the fixture has the secret");
    let shown = workspace
        .show(run.ids[0].as_deref().expect("recorded"))
        .expect("replays");
    assert_eq!(
        pack_json(&shown.pack, View::Full),
        pack_json(pack, View::Full)
    );
    assert!(!all_text_under(&f.store().join("ledger")).contains(SECRET));
}

#[test]
fn docs_members_contribute_their_documents_with_their_citations() {
    let (f, _) = project();
    let store = Workspace::for_store(&f.path().join("app.ctxpack"), Access::ReadWrite)
        .expect("a store workspace");
    store.create_store(false).expect("the store is created");
    for document in [
        r#"{"_id": 1, "text": "budget overflow in the selector", "status": "open"}"#,
        r#"{"_id": 2, "text": "budget overflow fixed last week", "status": "closed"}"#,
        r#"{"_id": 3, "text": "cake recipes", "status": "open"}"#,
    ] {
        store
            .insert_document(&InsertRequest {
                collection: "tickets".into(),
                document: Value::String(document.into()),
                replace: false,
                wait: false,
            })
            .expect(document);
    }
    // The store path is relative to the repository root.
    let plan = one_ctx_plan(
        &[
            "tickets = docs(\"app.ctxpack\", \"tickets\", \"text\", \"budget overflow\", filter: {\"status\": \"open\"}, top: 2)",
        ],
        "tickets",
    );
    let run = run_plan(&f.workspace(), &plan, &PlanRunRequest::default(), None).expect("runs");
    let pack = emitted(&run, 0);
    let hits: Vec<(&str, &str, &str)> = pack
        .hits
        .iter()
        .map(|h| {
            let c = &h.candidate;
            (c.citation.as_str(), c.family.as_str(), c.text.as_str())
        })
        .collect();
    assert_eq!(
        hits,
        [
            (
                "doc:tickets/1",
                "collection:tickets/1",
                "budget overflow in the selector"
            ),
            ("doc:tickets/3", "collection:tickets/3", "cake recipes"),
        ]
    );

    // A store that does not exist leaves the member unbound; it does not fail the run.
    let plan = one_ctx_plan(
        &["tickets = docs(\"nowhere.ctxpack\", \"tickets\", \"text\", \"budget\")"],
        "tickets",
    );
    let run = run_plan(&f.workspace(), &plan, &PlanRunRequest::default(), None).expect("runs");
    assert!(
        run.warnings.contains(
            "`tickets` is unbound and contributes nothing: no document store `nowhere.ctxpack`"
        ),
        "{}",
        run.warnings
    );
}

#[test]
fn queries_need_an_indexed_snapshot_and_say_which() {
    let (f, sha) = project();
    let plan = one_ctx_plan(
        &["hits = query(\"budget\")", "note = text(\"n\")"],
        "hits, note",
    );
    let run = run_plan(&f.workspace(), &plan, &PlanRunRequest::default(), None)
        .expect("an unindexed snapshot leaves the member unbound");
    assert!(
        run.warnings
            .contains("`hits` is unbound and contributes nothing: "),
        "{}",
        run.warnings
    );
    assert!(
        run.warnings.contains(&format!("(index {sha} first)")),
        "{}",
        run.warnings
    );
    assert_eq!(citations(emitted(&run, 0)), ["plan:d/note"]);
}
