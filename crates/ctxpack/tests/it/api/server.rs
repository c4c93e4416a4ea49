//! A team server's registry in process: what a token may record, and what its errors say.

use ctxpack_api::server::{Grant, Scope, ServerRegistry};
use ctxpack_api::{
    Control, ErrorKind, Format, IndexRequest, PackOptions, RenderOptions, SnapshotPackRequest,
    View, Workspace,
};

use crate::api::fixture::project;

const TEXT: RenderOptions = RenderOptions {
    format: Format::Text,
    view: View::Default,
    pretty: false,
};

/// A grant of `scope` on the repository `app` to the token `token`.
fn grant(token: &str, scope: Scope) -> Grant {
    Grant {
        token: token.into(),
        repo: "app".into(),
        scope,
    }
}

/// A request for `goal` at HEAD, which never indexes.
fn request(goal: &str) -> SnapshotPackRequest {
    SnapshotPackRequest {
        goal: goal.into(),
        index: false,
        ..SnapshotPackRequest::default()
    }
}

#[test]
fn a_server_token_records_at_most_its_quota_of_packs_a_day() {
    let (f, _) = project();
    let state = tempfile::tempdir().expect("tempdir");
    let registry = ServerRegistry::open(state.path(), true)
        .expect("opens")
        .with_ledger_quota(2);
    registry.add_repo("app", f.path()).expect("registers");
    let roots = [f.path().canonicalize().expect("canonical")];
    registry
        .workspace(&grant("admin", Scope::Write), &roots)
        .expect("a workspace")
        .index(&IndexRequest::default(), &Control::new())
        .expect("indexes");
    let reader = registry
        .workspace(&grant("reader", Scope::Read), &roots)
        .expect("a workspace");
    let pack = |workspace: &Workspace, goal: &str| {
        workspace.snapshot_pack(
            &request(goal),
            &PackOptions {
                record: Some(&TEXT),
                index_if_missing: false,
                rendering: None,
            },
        )
    };
    for goal in ["budget", "readme"] {
        let built = pack(&reader, goal).expect("within the quota");
        assert!(built.recorded.id().is_some(), "{goal} is recorded");
    }
    let error = pack(&reader, "configuration").expect_err("past the quota");
    assert_eq!(error.kind(), ErrorKind::OverQuota, "{error}");
    assert!(error.message().contains("2 packs today"), "{error}");
    assert_eq!(
        reader.log(10).expect("a log").entries.len(),
        2,
        "nothing recorded past it"
    );
    // A pack that records nothing is not counted, and another token has its own quota.
    reader
        .snapshot_pack(&request("configuration"), &PackOptions::default())
        .expect("an unrecorded pack");
    let other = registry
        .workspace(&grant("other", Scope::Read), &roots)
        .expect("a workspace");
    pack(&other, "configuration").expect("another token's quota");
}

#[test]
fn a_server_error_names_its_files_by_their_registered_names() {
    let (f, _) = project();
    let state = tempfile::tempdir().expect("tempdir");
    let registry = ServerRegistry::open(state.path(), true).expect("opens");
    registry.add_repo("app", f.path()).expect("registers");
    let roots = [f
        .path()
        .parent()
        .expect("a parent")
        .canonicalize()
        .expect("canonical")];
    let reader = registry
        .workspace(&grant("reader", Scope::Read), &roots)
        .expect("a workspace");
    // Nothing is indexed: the error names the store where it is on the server.
    let error = reader
        .snapshot_pack(&request("budget"), &PackOptions::default())
        .expect_err("no store yet");
    let state_dir = state.path().canonicalize().expect("canonical");
    let shown = |error: &ctxpack_api::Error| {
        let hint = match error.hint() {
            Some(ctxpack_api::Hint::Advice(advice)) => advice.clone(),
            _ => String::new(),
        };
        format!("{} {hint}", error.message())
    };
    let public = registry.public_error(&roots, error.clone());
    assert_eq!(public.kind(), error.kind());
    for text in [shown(&public)] {
        for path in [
            state.path().display().to_string(),
            state_dir.display().to_string(),
            f.path().display().to_string(),
            roots[0].display().to_string(),
        ] {
            assert!(!text.contains(&path), "{text} names {path}");
        }
    }
    assert!(
        shown(&error).contains(&state_dir.display().to_string())
            || shown(&error).contains(&state.path().display().to_string()),
        "the error names a server path before: {}",
        shown(&error)
    );
    assert!(shown(&public).contains("app"), "{}", shown(&public));

    // A file inside the checkout is named inside the repository, and a longer name that
    // only starts like a served path is left alone.
    let inside = f.path().join("src/budget.rs");
    let sibling = format!("{}-other/x", f.path().display());
    let error = ctxpack_api::Error::not_found(format!(
        "cannot read {}: gone. Nor {sibling}.",
        inside.display()
    ));
    let text = registry.public_error(&roots, error).message().to_owned();
    assert!(
        text.contains("[repository app]/src/budget.rs: gone"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "[server root]/{}-other/x",
            f.path().file_name().expect("a name").to_string_lossy()
        )),
        "{text}"
    );
}
