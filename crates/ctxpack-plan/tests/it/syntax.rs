//! Syntax errors, rendered like a compiler's and snapshot-tested.

use crate::errors;

#[test]
fn syntax_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "unterminated_string",
            "flow f\n  a = text(\"no end)\n  emit a\n",
        ),
        ("missing_paren", "flow f\n  a = read \"x.rs\"\n"),
        (
            "unknown_setting",
            "flow f\n  ctx d\n    purpose \"p\"\n    budjet 10\n",
        ),
        (
            "dedent_mismatch",
            "flow f\n    a = text(\"x\")\n  b = text(\"y\")\n",
        ),
        ("tab_indent", "flow f\n\ta = text(\"x\")\n"),
        (
            "invalid_json",
            "flow f\n  t = docs(\"s\", \"c\", \"text\", \"q\", filter: {\"status\": open})\n",
        ),
        ("unexpected_character", "flow f\n  a = text(\"x\") ; b\n"),
        ("ctx_without_block", "flow f\n  ctx d\n  emit d\n"),
        ("unclosed_paren", "flow f\n  a = read(\"x.rs\",\n"),
        ("missing_call", "flow f\n  a =\n"),
        ("keyword_as_name", "flow f\n  ctx = text(\"x\")\n"),
        (
            "range_without_end",
            "flow f\n  a = read(\"x\", lines: 1..)\n",
        ),
        ("bad_escape", "flow f\n  a = text(\"a\\qb\")\n"),
        (
            "statement_after_flow",
            "flow f\n  a = text(\"x\")\nemit a\n",
        ),
        ("plus_without_eq", "flow f\n  d + a\n"),
        (
            "budget_not_a_number",
            "flow f\n  ctx d\n    budget \"9000\"\n",
        ),
        ("name_as_argument", "flow f\n  a = read(path)\n"),
        ("indented_first_line", "  flow f\n"),
    ];
    for (name, source) in cases {
        insta::assert_snapshot!(*name, errors(source), source);
    }
}

#[test]
fn the_issue_example_parses() {
    let source = r#"
flow explain-failure
  src = read("crates/core/src/select.rs")
  spec = read("SPEC.md", lines: 1..80)
  tests = run("cargo test -p core")        # only with --allow-run
  hits = query("budget enforcement", top: 10)
  tickets = docs("app.ctxpack", "tickets", "text", "budget overflow", filter: {"status": "open"})
  ctx debug
    purpose "explain a failing selection test"
    budget 9000
    include src, tests, hits
    exclude spec
    pin src
  more = artifact("ci-log-17")
  debug += more, tickets
  emit debug
"#;
    let checked = ctxpack_plan::compile(source).expect("the issue's example compiles");
    assert!(checked.warnings.is_empty(), "{:?}", checked.warnings);
    let described: Vec<String> = checked
        .program
        .steps
        .iter()
        .map(|s| match &s.kind {
            ctxpack_plan::StepKind::Bind { name, source } => {
                format!("{name} = {}", source.describe())
            }
            ctxpack_plan::StepKind::Ctx(spec) => format!(
                "ctx {} budget {} meter {} members {:?} exclude {:?}",
                spec.name, spec.budget, spec.meter, spec.members, spec.exclude
            ),
            ctxpack_plan::StepKind::Append { target, members } => {
                format!("{target} += {members:?}")
            }
            ctxpack_plan::StepKind::Emit { ctx } => format!("emit {ctx}"),
        })
        .collect();
    assert_eq!(
        described,
        [
            r#"src = read("crates/core/src/select.rs")"#,
            r#"spec = read("SPEC.md", lines: 1..80)"#,
            r#"tests = run("cargo test -p core")"#,
            r#"hits = query("budget enforcement", top: 10)"#,
            r#"tickets = docs("app.ctxpack", "tickets", "text", "budget overflow", filter: {"status":"open"}, top: 10)"#,
            r#"ctx debug budget 9000 meter chars members [("src", Pinned), ("tests", Visible), ("hits", Visible)] exclude ["spec"]"#,
            r#"more = artifact("ci-log-17")"#,
            r#"debug += ["more", "tickets"]"#,
            "emit debug",
        ]
    );
}

#[test]
fn comments_blank_lines_and_multiline_calls() {
    let source = "# a plan\n\nflow f   # trailing\n\n  # inside\n  a = read(\n    \"x.rs\",\n    lines: 2..3,   # a window\n  )\n\n  ctx d\n    purpose \"p\"\n    budget 1_000\n    meter o200k\n    include a\n  emit d\n";
    let checked = ctxpack_plan::compile(source).expect("compiles");
    assert_eq!(checked.program.flow.as_deref(), Some("f"));
    assert_eq!(checked.program.steps.len(), 3);
}

#[test]
fn a_plan_without_flow_header() {
    let checked = ctxpack_plan::compile(
        "a = text(\"x\")\nctx d\n  purpose \"p\"\n  budget 5\n  include a\nemit d\n",
    )
    .expect("compiles");
    assert_eq!(checked.program.flow, None);
    assert_eq!(checked.program.steps.len(), 3);
}
