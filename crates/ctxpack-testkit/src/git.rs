//! The one way the tests run `git`: no user or system configuration, a fixed identity, no
//! repository inherited from the environment (as a git hook would pass one), and a panic that
//! shows git's own message when it fails.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The author and committer of every fixture commit.
pub const NAME: &str = "Test";
/// Their address.
pub const EMAIL: &str = "test@example.invalid";
/// The date of a script's first commit, 2026-01-01T00:00:00Z, in seconds since the epoch;
/// commit `n` of a repository (counting from 0) is dated `n` minutes later.
pub const EPOCH: u64 = 1_767_225_600;

/// The date of commit `n` in git's raw format (`<seconds> +0000`).
pub fn date(n: u64) -> String {
    format!("{} +0000", EPOCH + 60 * n)
}

/// A `git` command in `dir` with the environment every fixture uses.
pub fn command(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", NAME)
        .env("GIT_AUTHOR_EMAIL", EMAIL)
        .env("GIT_COMMITTER_NAME", NAME)
        .env("GIT_COMMITTER_EMAIL", EMAIL)
        .env("GIT_TERMINAL_PROMPT", "0")
        // A reading command such as `git status` never writes: by default it refreshes a
        // stale index under `index.lock`, and a test copying a cached repository at that
        // moment would copy the lock (and then fail to commit in its copy).
        .env("GIT_OPTIONAL_LOCKS", "0")
        // No housekeeping after a commit: `git commit` would otherwise start a
        // `git maintenance run --auto` process each time, and a test's repository never
        // grows enough to need one.
        .env("GIT_CONFIG_COUNT", "2")
        .env("GIT_CONFIG_KEY_0", "maintenance.auto")
        .env("GIT_CONFIG_VALUE_0", "false")
        .env("GIT_CONFIG_KEY_1", "gc.auto")
        .env("GIT_CONFIG_VALUE_1", "0");
    for inherited in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
    ] {
        command.env_remove(inherited);
    }
    command
}

/// Runs `git ARGS` in `dir` and returns its trimmed standard output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    run(command(dir).args(args), args, None)
}

/// [`git`] with more environment variables.
pub fn git_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    run(
        command(dir).args(args).envs(env.iter().copied()),
        args,
        None,
    )
}

/// [`git`] with `stdin` on its standard input.
pub fn git_stdin(dir: &Path, args: &[&str], stdin: &[u8]) -> String {
    run(command(dir).args(args), args, Some(stdin))
}

fn run(command: &mut Command, args: &[&str], stdin: Option<&[u8]>) -> String {
    let mut child = command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("git {args:?} does not start (is git on the PATH?): {e}"));
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        pipe.write_all(bytes)
            .unwrap_or_else(|e| panic!("git {args:?}: writing its input: {e}"));
    }
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap_or_else(|e| panic!("git {args:?} printed bytes that are not UTF-8: {e}"))
        .trim()
        .to_owned()
}

/// The commit `HEAD` of the repository at `root` names, read from its files (no process),
/// or `None` before the first commit.
pub fn head(root: &Path) -> Option<String> {
    let git_dir = root.join(".git");
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref: ") else {
        return Some(head.to_owned());
    };
    if let Ok(sha) = std::fs::read_to_string(git_dir.join(name)) {
        return Some(sha.trim().to_owned());
    }
    // A packed ref: `<sha> <name>` lines.
    let packed = std::fs::read_to_string(git_dir.join("packed-refs")).ok()?;
    packed.lines().find_map(|line| {
        let (sha, ref_name) = line.split_once(' ')?;
        (ref_name == name).then(|| sha.to_owned())
    })
}
