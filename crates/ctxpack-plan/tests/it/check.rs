//! Name resolution and validation (`plan check`): errors snapshot-tested, warnings by message.

use crate::{errors, warnings};

#[test]
fn resolution_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "undefined_include",
            "flow f\n  spec = text(\"s\")\n  ctx d\n    purpose \"p\"\n    budget 10\n    include spce\n  emit d\n",
        ),
        (
            "bound_twice",
            "flow f\n  a = text(\"x\")\n  a = text(\"y\")\n",
        ),
        (
            "append_to_a_value",
            "flow f\n  a = text(\"x\")\n  b = text(\"y\")\n  a += b\n",
        ),
        (
            "ctx_includes_itself",
            "flow f\n  ctx d\n    purpose \"p\"\n    budget 10\n    include d\n",
        ),
        (
            "cycle_through_append",
            "flow f\n  x = text(\"x\")\n  ctx a\n    purpose \"p\"\n    budget 10\n    include x\n  ctx b\n    purpose \"q\"\n    budget 10\n    include a\n  a += b\n  emit a\n",
        ),
        (
            "append_itself",
            "flow f\n  ctx a\n    purpose \"p\"\n    budget 10\n  a += a\n  emit a\n",
        ),
        ("emit_a_value", "flow f\n  a = text(\"x\")\n  emit a\n"),
        (
            "emit_before_ctx",
            "flow f\n  emit d\n  ctx d\n    purpose \"p\"\n    budget 10\n",
        ),
        (
            "zero_budget",
            "flow f\n  ctx d\n    purpose \"p\"\n    budget 0\n  emit d\n",
        ),
        (
            "budget_too_large",
            "flow f\n  ctx d\n    purpose \"p\"\n    budget 9007199254740992\n  emit d\n",
        ),
        (
            "unknown_meter",
            "flow f\n  ctx d\n    purpose \"p\"\n    budget 10\n    meter tokens\n  emit d\n",
        ),
        ("unknown_source", "flow f\n  t = cargo_test(\"-p\")\n"),
        ("read_outside", "flow f\n  a = read(\"../secrets.txt\")\n"),
        ("read_absolute", "flow f\n  a = read(\"/etc/passwd\")\n"),
        (
            "wrong_kind",
            "flow f\n  a = read(\"x.rs\", lines: \"1-80\")\n",
        ),
        ("unknown_named", "flow f\n  a = query(\"q\", limit: 3)\n"),
        (
            "missing_positional",
            "flow f\n  a = docs(\"app.ctxpack\", \"tickets\")\n",
        ),
        ("too_many_positional", "flow f\n  a = text(\"x\", \"y\")\n"),
        (
            "given_twice",
            "flow f\n  a = query(\"q\", top: 3, top: 4)\n",
        ),
        ("branch_at", "flow f\n  a = read(\"x.rs\", at: \"main\")\n"),
        (
            "at_and_worktree",
            "flow f\n  a = read(\"x.rs\", at: \"HEAD\", worktree: true)\n",
        ),
        (
            "lines_from_zero",
            "flow f\n  a = read(\"x.rs\", lines: 0..5)\n",
        ),
        ("empty_range", "flow f\n  a = read(\"x.rs\", lines: 9..5)\n"),
        ("top_zero", "flow f\n  a = query(\"q\", top: 0)\n"),
        ("run_unterminated", "flow f\n  a = run(\"echo 'oops\")\n"),
        (
            "filter_not_object",
            "flow f\n  a = docs(\"s\", \"c\", \"f\", \"q\", filter: [1])\n",
        ),
        (
            "member_listed_twice",
            "flow f\n  a = text(\"x\")\n  ctx d\n    purpose \"p\"\n    budget 10\n    include a, a\n  emit d\n",
        ),
        (
            "append_existing_member",
            "flow f\n  a = text(\"x\")\n  ctx d\n    purpose \"p\"\n    budget 10\n    include a\n  d += a\n  emit d\n",
        ),
        (
            "setting_twice",
            "flow f\n  ctx d\n    purpose \"p\"\n    budget 10\n    budget 20\n  emit d\n",
        ),
        (
            "undefined_exclude_and_append",
            "flow f\n  ctx d\n    purpose \"p\"\n    budget 10\n    exclude nope\n  d += missing\n  emit d\n",
        ),
        (
            "several_errors",
            "flow f\n  a = read(\"/x\")\n  b = nope()\n  emit c\n",
        ),
    ];
    for (name, source) in cases {
        insta::assert_snapshot!(*name, errors(source), source);
    }
}

#[test]
fn warnings_do_not_stop_a_plan() {
    let cases: &[(&str, &[&str])] = &[
        (
            "flow f\n  ctx d\n    purpose \"p\"\n    budget 10\n    include later\n  later = text(\"x\")\n  emit d\n",
            &["`later` is not bound yet at this line"],
        ),
        (
            "flow f\n  a = text(\"x\")\n  ctx d\n    include a\n  emit d\n",
            &["ctx `d` has no purpose", "ctx `d` has no budget"],
        ),
        (
            "flow f\n  a = text(\"x\")\n  ctx d\n    purpose \"p\"\n    budget 10\n    include a\n",
            &["the plan emits nothing"],
        ),
        (
            "flow f\n  a = text(\"x\")\n  ctx d\n    purpose \"p\"\n    budget 10\n    exclude a\n  d += a\n  emit d\n",
            &["`a` is excluded from `d`"],
        ),
        (
            "flow f\n  a = text(\"x\")\n  ctx d\n    purpose \"p\"\n    budget 10\n    include a\n  emit d\n",
            &[],
        ),
    ];
    for (source, expected) in cases {
        let checked = ctxpack_plan::compile(source).expect("compiles with warnings");
        let messages: Vec<&str> = checked
            .warnings
            .iter()
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(messages, *expected, "{source}");
    }
    insta::assert_snapshot!(
        "bound_later_warning",
        warnings(
            "flow f\n  ctx d\n    purpose \"p\"\n    budget 10\n    include later\n  later = text(\"x\")\n  emit d\n"
        )
    );
}
