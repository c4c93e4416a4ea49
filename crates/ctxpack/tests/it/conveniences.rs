//! The conveniences on the real binary: `-o/--output`, `-q/--quiet`, `completions`, `man` and
//! `hook install|uninstall` fired by a real `git commit`.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::ctxpack;
use crate::pack::{Cli, Fixture, project};

/// `path` as an argument.
fn arg(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

#[test]
fn output_writes_the_bytes_stdout_would_have() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let out = tempfile::tempdir().expect("tempdir");
    for format in ["text", "json", "markdown"] {
        let args = ["pack", "budget", "--format", format, "--no-ledger"];
        let printed = f.run(&args);
        assert_eq!(printed.code, 0, "{}", printed.stderr);
        assert!(!printed.stdout.is_empty());

        let file = out.path().join(format!("pack.{format}"));
        for flag in ["-o", "--output"] {
            let mut with: Vec<&str> = args.to_vec();
            with.extend([flag, arg(&file)]);
            let written = f.run(&with);
            assert_eq!(written.code, 0, "{}", written.stderr);
            assert_eq!(written.stdout, "", "nothing on stdout");
            assert_eq!(
                std::fs::read_to_string(&file).expect("written"),
                printed.stdout
            );
        }
    }
    // The flag is global: before the subcommand too, and for any printing command.
    let file = out.path().join("status.txt");
    let status = ctxpack(&["-o", arg(&file), "status", "--cwd", &f.cwd()], b"");
    assert_eq!(status.code, 0, "{}", status.stderr);
    assert!(
        std::fs::read_to_string(&file)
            .expect("written")
            .contains("snapshots: 1")
    );
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(out.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
}

#[test]
fn output_refuses_the_store_and_links_and_a_failure_keeps_the_old_file() {
    let (f, _) = project();
    assert_eq!(f.run(&["index"]).code, 0);
    let inside = f.path().join(".ctxpack/pack.txt");
    let run = f.run(&["pack", "budget", "-o", arg(&inside)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--output"), "{}", run.stderr);
    assert!(run.stderr.contains("inside the store"), "{}", run.stderr);
    assert!(!inside.exists());
    // The store itself, and a named store elsewhere.
    let store = f.path().join(".ctxpack");
    assert_eq!(f.run(&["status", "-o", arg(&store)]).code, 2);
    assert!(store.is_dir());
    let named = tempfile::tempdir().expect("tempdir");
    let run = f.run(&[
        "index",
        "--store",
        arg(named.path()),
        "-o",
        arg(&named.path().join("summary")),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!named.path().join("summary").exists());

    // A symbolic link is not written through.
    let out = tempfile::tempdir().expect("tempdir");
    let target = out.path().join("target.txt");
    std::fs::write(&target, "mine\n").expect("write");
    let link = out.path().join("link.txt");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let run = f.run(&["pack", "budget", "-o", arg(&link)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "mine\n");

    // A command that fails leaves the file as it was; a JSON envelope still goes to stdout.
    let file = out.path().join("pack.json");
    std::fs::write(&file, "previous\n").expect("write");
    let run = f.run(&[
        "pack",
        "budget",
        "--at",
        "zzzz",
        "--format",
        "json",
        "-o",
        arg(&file),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stdout.contains("\"error\""), "{}", run.stdout);
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "previous\n");

    // The MCP server's stdout is its protocol.
    let run = ctxpack(&["mcp", "-o", arg(&out.path().join("mcp"))], b"");
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn quiet_prints_nothing_on_stderr_on_success_but_still_prints_errors() {
    // `mcp config` explains the configuration on stderr; --quiet silences it.
    let args = ["mcp", "config", "--client", "claude-code"];
    let loud = ctxpack(&args, b"");
    assert_eq!(loud.code, 0, "{}", loud.stderr);
    assert!(!loud.stderr.is_empty(), "the test needs a note to silence");
    for flag in ["-q", "--quiet"] {
        let mut with = args.to_vec();
        with.push(flag);
        let quiet = ctxpack(&with, b"");
        assert_eq!(quiet.code, 0);
        assert_eq!(quiet.stderr, "");
        assert_eq!(quiet.stdout, loud.stdout, "the data is unchanged");
    }

    let (f, _) = project();
    let run = f.run(&["-q", "pack", "budget"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    assert!(run.stdout.contains("src/budget.rs"));

    let run = f.run(&["pack", "budget", "--at", "zzzz", "-q"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
}

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = ctxpack(&["completions", shell], b"");
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        for subcommand in ["pack", "index", "hook", "completions"] {
            assert!(
                run.stdout.contains(subcommand),
                "{shell} completes `{subcommand}`"
            );
        }
    }
    assert_eq!(ctxpack(&["completions", "tcsh"], b"").code, 2);
    // The values of the flags that take names are offered too.
    let bash = ctxpack(&["completions", "bash"], b"").stdout;
    for value in ["markdown", "o200k", "coverage", "minimal", "durable"] {
        assert!(bash.contains(value), "bash completes `{value}`");
    }
}

#[test]
fn man_prints_a_roff_page() {
    let run = ctxpack(&["man"], b"");
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Only roff requests (string definitions) come before the title.
    let title = run
        .stdout
        .lines()
        .position(|line| line.starts_with(".TH "))
        .expect("a .TH header");
    assert!(run.stdout.lines().take(title).all(|l| l.starts_with('.')));
    assert!(
        run.stdout
            .lines()
            .nth(title)
            .expect("title")
            .starts_with(".TH ctxpack 1")
    );
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS"] {
        assert!(run.stdout.contains(section), "{section}");
    }
    assert!(run.stdout.contains("hook"));

    // A command's own page: its options, its examples and what its exit status means.
    let pack = ctxpack(&["man", "pack"], b"");
    assert_eq!(pack.code, 0, "{}", pack.stderr);
    assert!(
        pack.stdout.contains(".TH ctxpack-pack 1"),
        "{}",
        pack.stdout
    );
    for section in [".SH OPTIONS", ".SH EXAMPLES", ".SH \"EXIT STATUS\""] {
        assert!(pack.stdout.contains(section), "{section}: {}", pack.stdout);
    }
    assert!(pack.stdout.contains("\\-\\-budget"), "{}", pack.stdout);
    assert!(pack.stdout.contains("ctxpack pack \"why does login fail\""));
    let unknown = ctxpack(&["man", "pakc"], b"");
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("one of: pack,"),
        "{}",
        unknown.stderr
    );
}

/// A new user's first steps: `--help` starts with `pack` and an example, and a branch name,
/// a directory outside any repository, an empty goal or a budget without its `k` say what to
/// do instead.
#[test]
fn help_starts_with_pack_and_mistakes_say_what_to_do() {
    let help = ctxpack(&["--help"], b"");
    assert_eq!(help.code, 0, "{}", help.stderr);
    let first = help
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .nth(1)
        .expect("a command");
    assert!(first.trim_start().starts_with("pack "), "{first}");
    assert!(
        help.stdout.contains("Start here: ctxpack pack"),
        "{}",
        help.stdout
    );
    let pack_help = ctxpack(&["pack", "--help"], b"");
    assert!(
        pack_help.stdout.contains("Examples:\n  ctxpack pack \""),
        "{}",
        pack_help.stdout
    );

    let f = Fixture::new();
    f.write("src/lib.rs", "pub fn first() {}\n");
    f.commit("first");
    let branch = f.run(&["pack", "first", "--at", "main"]);
    assert_eq!(branch.code, 2, "{}", branch.stderr);
    assert!(
        branch
            .stderr
            .contains("hint: name a branch or tag by its commit: `git rev-parse main`"),
        "{}",
        branch.stderr
    );
    let empty = f.run(&["pack", ""]);
    assert_eq!(empty.code, 2, "{}", empty.stderr);
    assert!(
        empty.stderr.contains("hint: say what you are about to do"),
        "{}",
        empty.stderr
    );
    let bare = f.run(&["pack", "first", "--budget", "8"]);
    assert_eq!(bare.code, 2, "{}", bare.stderr);
    assert!(
        bare.stderr
            .contains("hint: budgets count o200k, not thousands of them: 8k is 8000"),
        "{}",
        bare.stderr
    );
    let outside = tempfile::tempdir().expect("tempdir");
    let outside = ctxpack(
        &[
            "pack",
            "x",
            "--cwd",
            outside.path().to_str().expect("UTF-8"),
        ],
        b"",
    );
    assert_eq!(outside.code, 2, "{}", outside.stderr);
    assert!(
        outside
            .stderr
            .contains("hint: run it inside a git repository"),
        "{}",
        outside.stderr
    );
}

#[test]
fn hooks_index_a_real_commit_and_uninstall_removes_them() {
    let f = Fixture::new();
    f.write("src/lib.rs", "pub fn first() {}\n");
    f.commit("first");
    let run = f.run(&["hook", "install"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 3, "{}", run.stdout);
    assert!(
        run.stdout.contains("post-commit: created"),
        "{}",
        run.stdout
    );

    f.write("src/lib.rs", "pub fn second() {}\n");
    let sha = f.commit("second");
    // A bound for a broken hook, not a measurement.
    let deadline = Instant::now() + Duration::from_secs(120);
    let log = f.path().join(".ctxpack/hook.log");
    let expected = format!("indexed {}", &sha[..12]);
    while !std::fs::read_to_string(&log).is_ok_and(|text| text.contains(&expected)) {
        assert!(Instant::now() < deadline, "the hook did not index {sha}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = f.run(&["status", "--format", "json"]);
    assert!(
        status.stdout.contains("\"headIndexed\":true"),
        "{}",
        status.stdout
    );

    let run = f.run(&["hook", "uninstall"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!f.path().join(".git/hooks/post-commit").exists());

    // A hook in another language is refused with advice (exit 5).
    let merge = f.path().join(".git/hooks/post-merge");
    std::fs::write(&merge, "#!/usr/bin/env python3\n").expect("write");
    let run = f.run(&["hook", "install"]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert!(run.stderr.contains("hint: "), "{}", run.stderr);
}
