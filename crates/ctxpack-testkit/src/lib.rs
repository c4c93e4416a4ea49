//! Test support for the ctxpack workspace; a dev-dependency only, never published.
//!
//! Tests run against real git repositories. Building one with a `git` process per step costs
//! more than most tests do, so a repository is written as a [`Script`] (files written, linked
//! and removed, commits made) that `git fast-import` turns into history in one process, with a
//! fixed identity and fixed dates, so the same script gives the same commit ids everywhere.
//! A script is built once and kept in a cache keyed by its content ([`cache`]): the cached
//! repository is read-only, and a test that writes takes a [`Fixture`], a copy of its own.
//! Directories derived from a fixture (a store indexed from it, say) are made once per test
//! binary with [`Repo::derived`] or [`cache::derived`] and copied on use too.
//!
//! ```
//! use ctxpack_testkit::Script;
//!
//! let repo = Script::new()
//!     .write("src/lib.rs", "pub fn answer() -> u32 { 42 }\n")
//!     .commit("first")
//!     .write("README.md", "# Demo\n")
//!     .commit("second")
//!     .build();
//! assert_eq!(repo.commits().len(), 2);
//! let fixture = repo.checkout();
//! assert_eq!(fixture.head(), repo.commits()[1]);
//! fixture.write("src/lib.rs", "pub fn answer() -> u32 { 43 }\n");
//! let third = fixture.commit("third");
//! assert_ne!(third, repo.commits()[1]);
//! ```
//!
//! Every helper panics with what went wrong: a test that cannot build its fixture has failed.

#![allow(clippy::missing_panics_doc)]

pub mod cache;
mod fixture;
pub mod git;
mod script;

pub use fixture::Fixture;
pub use script::{Repo, Script};

#[cfg(test)]
mod tests {
    use super::*;

    fn history() -> Script {
        let mut script = Script::new();
        script
            .write("src/a.rs", "pub fn a() {}\n")
            .write("bin/run", "#!/bin/sh\n")
            .link("docs/latest", "../src/a.rs")
            .commit("first")
            .remove("src")
            .write("src", "a file where a directory was\n")
            .submodule("vendor/lib", "0123456789012345678901234567890123456789")
            .write("name with \"quotes\"", "q\n")
            .commit("second\n\nwith a body");
        script
    }

    #[test]
    fn a_script_builds_the_history_it_says_with_fixed_ids() {
        let repo = history().build();
        assert_eq!(repo.commits().len(), 2);
        let first = &repo.commits()[0];
        let listed = git::git(
            repo.path(),
            &["ls-tree", "-r", "--format=%(objectmode) %(path)", first],
        );
        assert_eq!(
            listed,
            "100644 bin/run\n120000 docs/latest\n100644 src/a.rs"
        );
        let listed = git::git(
            repo.path(),
            &[
                "ls-tree",
                "-r",
                "--format=%(objectmode) %(path)",
                repo.head(),
            ],
        );
        assert_eq!(
            listed,
            "100644 bin/run\n120000 docs/latest\n100644 \"name with \\\"quotes\\\"\"\n100644 src\n160000 vendor/lib"
        );
        let log = git::git(repo.path(), &["log", "--format=%an <%ae> %at %ct %s"]);
        assert_eq!(
            log,
            "Test <test@example.invalid> 1767225660 1767225660 second\nTest <test@example.invalid> 1767225600 1767225600 first"
        );
        // The working tree is the last commit's, and clean.
        assert_eq!(
            std::fs::read_to_string(repo.path().join("src")).expect("src is a file"),
            "a file where a directory was\n"
        );
        assert_eq!(git::git(repo.path(), &["status", "--porcelain"]), "");
        // The same script gives the same commits, cached or not.
        let again = history().build();
        assert_eq!(again.commits(), repo.commits());
        assert_eq!(
            repo.head(),
            "855266afe0c914e8c42d928835c0f0f01e97d4d8",
            "fixed identity and dates make fixed ids"
        );
    }

    #[test]
    fn builders_racing_for_one_script_agree() {
        let mut script = Script::new();
        script.write("race.txt", "four builders\n").commit("race");
        // Built anew: no cached copy to find.
        let key = script.build().key;
        let _ = std::fs::remove_dir_all(cache::root().join("git").join(&key));
        let heads: Vec<String> = std::thread::scope(|scope| {
            let builders: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| script.build().head().to_owned()))
                .collect();
            builders
                .into_iter()
                .map(|b| b.join().expect("a builder"))
                .collect()
        });
        assert!(heads.windows(2).all(|w| w[0] == w[1]), "{heads:?}");
        let partial = std::fs::read_dir(cache::root().join("git"))
            .expect("the cache")
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!(".{key}"))
            })
            .count();
        assert_eq!(partial, 0, "the losers' copies are removed");
    }

    #[test]
    fn a_checkout_is_a_copy_that_commits_at_the_next_date() {
        let repo = history().build();
        let fixture = repo.checkout();
        assert_eq!(fixture.head(), repo.head());
        fixture.write("lib/b.rs", "pub fn b() {}\n");
        let third = fixture.commit("third");
        assert_eq!(
            fixture.git(&["log", "-1", "--format=%at %ct"]),
            "1767225720 1767225720"
        );
        assert_ne!(third, repo.head());
        assert!(
            !repo.path().join("lib/b.rs").exists(),
            "the cached repository is untouched"
        );
        assert_eq!(git::head(repo.path()).as_deref(), Some(repo.head()));
    }

    #[test]
    fn reading_a_repository_never_writes_its_index() {
        let repo = history().build();
        let fixture = repo.checkout();
        // A file whose stat data no longer matches its index entry: a refreshing `git status`
        // would rewrite the index to record the new time.
        let file = std::fs::File::options()
            .append(true)
            .open(fixture.path().join("bin/run"))
            .expect("a fixture file");
        file.set_modified(
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(git::EPOCH),
        )
        .expect("setting a file's time");
        drop(file);
        let index = fixture.path().join(".git/index");
        let before = std::fs::read(&index).expect("the index");
        assert_eq!(fixture.git(&["status", "--porcelain"]), "");
        assert_eq!(std::fs::read(&index).expect("the index"), before);
    }

    #[test]
    fn a_derived_directory_is_made_once_and_copied() {
        let mut script = Script::new();
        script.write("a.txt", "a\n").commit("one");
        let repo = script.build();
        let made = std::sync::atomic::AtomicU32::new(0);
        for _ in 0..3 {
            let fixture = repo.derived("marked", |f| {
                made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                f.write("made.txt", "made\n");
            });
            assert!(fixture.path().join("made.txt").is_file());
            fixture.write("made.txt", "changed by one test\n");
        }
        assert!(
            made.into_inner() <= 1,
            "made at most once (once per test binary)"
        );
    }
}
