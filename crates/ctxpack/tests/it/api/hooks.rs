//! Git hooks that index in the background: installed into real repositories, fired by real
//! `git commit`s, and removed leaving every pre-existing hook byte for byte as it was.
//!
//! The program the hooks run is a stand-in for the `ctxpack` binary (which this crate does
//! not build): a script that runs this test binary's [`hook_child`], which indexes through
//! the API as `ctxpack index --wait` does. The command line's tests fire the real binary.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ctxpack_api::hooks::{HookChange, HookInstallRequest, HookName, HookUninstallRequest};
use ctxpack_api::{ErrorKind, IndexRequest, Workspace, WorkspaceOptions};

use crate::api::fixture::{Fixture, Workspaces};

/// Set in the environment of [`hook_child`] runs: the arguments the hook passed.
const CHILD_ARGS: &str = "CTXPACK_TEST_HOOK_ARGS";

/// The stand-in program: not a test of its own. Run by a hook (with [`CHILD_ARGS`] set) it
/// indexes the repository the hook runs in, as `ctxpack index --wait` would.
#[test]
#[ignore = "run by the hooks the other tests install"]
fn hook_child() {
    let Ok(args) = std::env::var(CHILD_ARGS) else {
        return;
    };
    assert!(
        args.starts_with("index --wait"),
        "the hook runs index: {args}"
    );
    let workspace = Workspace::open(WorkspaceOptions::default()).expect("opens");
    let summary = workspace
        .index(
            &IndexRequest {
                wait: true,
                ..IndexRequest::default()
            },
            &ctxpack_api::Control::new(),
        )
        .expect("indexes");
    println!("{summary}");
}

/// Writes an executable script at `path`.
fn script(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The stand-in for ctxpack, in `dir`.
fn stand_in(dir: &Path) -> PathBuf {
    let program = dir.join("ctxpack");
    let test_binary = std::env::current_exe().expect("the test binary");
    script(
        &program,
        &format!(
            "#!/bin/sh\n{CHILD_ARGS}=\"$*\" exec '{}' api::hooks::hook_child --exact --ignored --nocapture --test-threads=1\n",
            test_binary.display()
        ),
    );
    program
}

fn install(fixture: &Fixture, program: &Path) -> Vec<HookChange> {
    let report = fixture
        .workspace()
        .install_hooks(&HookInstallRequest {
            program: program.to_owned(),
            ..HookInstallRequest::default()
        })
        .expect("installs");
    report.hooks.iter().map(|h| h.change).collect()
}

fn uninstall(fixture: &Fixture) -> Vec<HookChange> {
    let report = fixture
        .workspace()
        .uninstall_hooks(&HookUninstallRequest::default())
        .expect("uninstalls");
    report.hooks.iter().map(|h| h.change).collect()
}

/// Polls `done` every 50 ms for at most two minutes: a bound for a broken hook, not a
/// measurement.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn hook_path(fixture: &Fixture, hook: &str) -> PathBuf {
    fixture.path().join(".git/hooks").join(hook)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("exists")
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn a_real_commit_is_indexed_in_the_background() {
    let fixture = Fixture::new();
    fixture.write("src/lib.rs", "pub fn first() {}\n");
    fixture.commit("first");
    let programs = tempfile::tempdir().expect("tempdir");
    let program = stand_in(programs.path());
    assert_eq!(install(&fixture, &program), [HookChange::Created; 3]);
    assert_eq!(mode(&hook_path(&fixture, "post-commit")), 0o755);

    fixture.write("src/lib.rs", "pub fn second() {}\n");
    let sha = fixture.commit("second");
    let workspace = fixture.workspace();
    wait_for("the new commit's snapshot", || {
        workspace
            .status()
            .is_ok_and(|s| s.snapshots.iter().any(|snapshot| snapshot.sha == sha))
    });
    // The hook's output is in the store's log; the run is over once the test harness has
    // printed its result.
    let log = fixture.store().join("hook.log");
    wait_for("the end of the hook's run", || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("test result: "))
    });
    let text = std::fs::read_to_string(&log).expect("a log");
    assert!(text.contains("test result: ok"), "{text}");
    assert!(text.contains(&format!("indexed {}", &sha[..12])), "{text}");
}

#[test]
fn uninstall_restores_existing_hooks_byte_for_byte() {
    let fixture = Fixture::new();
    fixture.write("a.rs", "pub fn a() {}\n");
    fixture.commit("one");
    let commit_hook: &[u8] = b"#!/bin/sh\r\n# mine\necho \"$1\" >> marker\nexit 0";
    let checkout_hook: &[u8] = b"#!/bin/bash";
    let (commit, checkout, merge) = (
        hook_path(&fixture, "post-commit"),
        hook_path(&fixture, "post-checkout"),
        hook_path(&fixture, "post-merge"),
    );
    std::fs::create_dir_all(commit.parent().expect("dir")).expect("mkdir");
    std::fs::write(&commit, commit_hook).expect("write");
    std::fs::set_permissions(&commit, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::fs::write(&checkout, checkout_hook).expect("write");
    std::fs::set_permissions(&checkout, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let _ = std::fs::remove_file(&merge);

    let program = Path::new("/nonexistent/ctxpack");
    assert_eq!(
        install(&fixture, program),
        [HookChange::Added, HookChange::Added, HookChange::Created]
    );
    let installed: Vec<Vec<u8>> = [&commit, &checkout, &merge]
        .iter()
        .map(|p| std::fs::read(p).expect("read"))
        .collect();
    assert!(installed[0].starts_with(b"#!/bin/sh\r\n# >>> ctxpack hook >>>\n"));
    assert!(
        installed[0].ends_with(b"# <<< ctxpack hook <<<\n# mine\necho \"$1\" >> marker\nexit 0")
    );
    assert_eq!(mode(&commit), 0o700, "the permissions are kept");

    // Installing again changes nothing.
    assert_eq!(install(&fixture, program), [HookChange::Unchanged; 3]);
    for (path, before) in [&commit, &checkout, &merge].iter().zip(&installed) {
        assert_eq!(&std::fs::read(path).expect("read"), before);
    }
    // Another program replaces the block in place.
    assert_eq!(
        install(&fixture, Path::new("/elsewhere/ctxpack")),
        [HookChange::Updated; 3]
    );

    assert_eq!(
        uninstall(&fixture),
        [
            HookChange::Restored,
            HookChange::Restored,
            HookChange::Deleted
        ]
    );
    assert_eq!(std::fs::read(&commit).expect("read"), commit_hook);
    assert_eq!(std::fs::read(&checkout).expect("read"), checkout_hook);
    assert!(!merge.exists(), "the hook ctxpack created is gone");
    assert_eq!(mode(&commit), 0o700);
    assert_eq!(uninstall(&fixture), [HookChange::Absent; 3]);
}

#[test]
fn lines_added_to_a_created_hook_are_kept() {
    let fixture = Fixture::new();
    install(&fixture, Path::new("ctxpack"));
    let merge = hook_path(&fixture, "post-merge");
    let mut text = std::fs::read(&merge).expect("read");
    text.extend_from_slice(b"echo mine\n");
    std::fs::write(&merge, &text).expect("write");
    let changes = uninstall(&fixture);
    assert_eq!(changes[2], HookChange::Restored);
    assert_eq!(
        std::fs::read(&merge).expect("read"),
        b"#!/bin/sh\necho mine\n"
    );
}

#[test]
fn the_hook_exits_0_when_ctxpack_is_gone_and_keeps_the_hooks_own_status() {
    let fixture = Fixture::new();
    fixture.write("a.rs", "pub fn a() {}\n");
    fixture.commit("one");
    let checkout = hook_path(&fixture, "post-checkout");
    std::fs::create_dir_all(checkout.parent().expect("dir")).expect("mkdir");
    script(
        &checkout,
        "#!/bin/sh\necho checked-out >> user-marker\nexit 3\n",
    );
    let programs = tempfile::tempdir().expect("tempdir");
    let program = stand_in(programs.path());
    install(&fixture, &program);
    std::fs::remove_file(&program).expect("the program is gone");

    let run = |hook: &str| {
        Command::new(hook_path(&fixture, hook))
            .current_dir(fixture.path())
            .output()
            .expect("the hook runs")
    };
    let out = run("post-commit");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    // The user's hook still runs, and its exit status is still the hook's.
    assert_eq!(run("post-checkout").status.code(), Some(3));
    assert!(fixture.path().join("user-marker").exists());

    // A program looked up on PATH that is not there does nothing either.
    install(&fixture, Path::new("ctxpack-not-installed-anywhere"));
    assert_eq!(run("post-merge").status.code(), Some(0));
    // And git is not failed.
    fixture.write("a.rs", "pub fn b() {}\n");
    fixture.commit("two");
    assert!(
        !fixture.store().join("ctxpack.sqlite").exists(),
        "nothing indexed"
    );
}

#[test]
fn a_hook_that_is_not_a_shell_script_is_refused_and_nothing_is_written() {
    let fixture = Fixture::new();
    let merge = hook_path(&fixture, "post-merge");
    std::fs::create_dir_all(merge.parent().expect("dir")).expect("mkdir");
    script(&merge, "#!/usr/bin/env python3\nprint('hi')\n");
    let e = fixture
        .workspace()
        .install_hooks(&HookInstallRequest::default())
        .expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.message().contains("not a shell script"), "{e}");
    assert!(e.hint().is_some());
    assert!(
        !hook_path(&fixture, "post-commit").exists(),
        "all or nothing"
    );
}

#[test]
fn core_hooks_path_is_respected_inside_the_repository_and_refused_outside() {
    let fixture = Fixture::new();
    fixture.git(&["config", "core.hooksPath", ".githooks"]);
    let report = fixture
        .workspace()
        .install_hooks(&HookInstallRequest::default())
        .expect("installs");
    assert_eq!(report.hooks_dir, fixture.path().join(".githooks"));
    assert!(fixture.path().join(".githooks/post-commit").exists());
    assert!(!hook_path(&fixture, "post-commit").exists());

    let outside = tempfile::tempdir().expect("tempdir");
    let shared = outside.path().to_str().expect("UTF-8").to_owned();
    fixture.git(&["config", "core.hooksPath", &shared]);
    let e = fixture
        .workspace()
        .install_hooks(&HookInstallRequest::default())
        .expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.message().contains("outside the repository"), "{e}");
    assert_eq!(std::fs::read_dir(outside.path()).expect("dir").count(), 0);
}

#[test]
fn a_hooks_directory_that_links_outside_is_refused() {
    let fixture = Fixture::new();
    let hooks = fixture.path().join(".git/hooks");
    let _ = std::fs::remove_dir_all(&hooks);
    let outside = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(outside.path(), &hooks).expect("symlink");
    let e = fixture
        .workspace()
        .install_hooks(&HookInstallRequest::default())
        .expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.message().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read_dir(outside.path()).expect("dir").count(), 0);

    // A hook file that is a link is refused too.
    std::fs::remove_file(&hooks).expect("unlink");
    std::fs::create_dir(&hooks).expect("mkdir");
    let target = fixture.path().join("scripts-post-commit");
    script(&target, "#!/bin/sh\n");
    std::os::unix::fs::symlink(&target, hooks.join(HookName::PostCommit.name())).expect("symlink");
    let e = fixture
        .workspace()
        .install_hooks(&HookInstallRequest::default())
        .expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(std::fs::read(&target).expect("read"), b"#!/bin/sh\n");
}
