//! Repositories written as scripts and built by `git fast-import`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cache;
use crate::fixture::Fixture;
use crate::git;

/// Changes the fixture format: a new value builds every cached repository again.
const FORMAT: &[u8] = b"ctxpack-testkit script 1";

/// One step of a script.
#[derive(Clone, Debug)]
enum Step {
    /// A regular file with these bytes (mode 100644, or 100755 when executable).
    Write {
        path: String,
        bytes: Vec<u8>,
        executable: bool,
    },
    /// A symbolic link to a target.
    Link { path: String, target: String },
    /// A gitlink: a submodule entry naming a commit.
    Submodule { path: String, commit: String },
    /// A file or a whole directory removed.
    Remove { path: String },
    /// Everything so far committed, with this message.
    Commit { message: String },
}

/// A repository's history, step by step: files written, linked and removed, then committed.
/// Each commit holds its parent's tree with the steps since applied, on branch `main`, by
/// [`git::NAME`] at [`git::date`]`(n)` for the `n`-th commit. [`Script::build`] builds it once
/// and caches it by its content.
#[derive(Clone, Debug, Default)]
pub struct Script {
    steps: Vec<Step>,
}

impl Script {
    /// An empty script (a repository with no commits).
    pub fn new() -> Script {
        Script::default()
    }

    /// Writes a regular file (its directories are implied).
    pub fn write(&mut self, path: &str, bytes: impl AsRef<[u8]>) -> &mut Script {
        self.file(path, bytes.as_ref(), false)
    }

    /// Writes an executable file.
    pub fn executable(&mut self, path: &str, bytes: impl AsRef<[u8]>) -> &mut Script {
        self.file(path, bytes.as_ref(), true)
    }

    fn file(&mut self, path: &str, bytes: &[u8], executable: bool) -> &mut Script {
        self.steps.push(Step::Write {
            path: path.to_owned(),
            bytes: bytes.to_vec(),
            executable,
        });
        self
    }

    /// Makes `path` a symbolic link to `target`.
    pub fn link(&mut self, path: &str, target: &str) -> &mut Script {
        self.steps.push(Step::Link {
            path: path.to_owned(),
            target: target.to_owned(),
        });
        self
    }

    /// Makes `path` a submodule entry naming `commit` (which need not exist).
    pub fn submodule(&mut self, path: &str, commit: &str) -> &mut Script {
        self.steps.push(Step::Submodule {
            path: path.to_owned(),
            commit: commit.to_owned(),
        });
        self
    }

    /// Removes a file, link or directory.
    pub fn remove(&mut self, path: &str) -> &mut Script {
        self.steps.push(Step::Remove {
            path: path.to_owned(),
        });
        self
    }

    /// Commits the steps so far.
    pub fn commit(&mut self, message: &str) -> &mut Script {
        self.steps.push(Step::Commit {
            message: message.to_owned(),
        });
        self
    }

    /// The number of commits the script makes.
    pub fn commits(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Commit { .. }))
            .count()
    }

    /// The `git fast-import` stream that makes the history.
    fn stream(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut pending: Vec<&Step> = Vec::new();
        let mut n: u64 = 0;
        for step in &self.steps {
            let Step::Commit { message } = step else {
                pending.push(step);
                continue;
            };
            n += 1;
            let date = git::date(n - 1);
            let mut head = String::new();
            let _ = write!(
                head,
                "commit refs/heads/main\nmark :{n}\nauthor {name} <{email}> {date}\ncommitter {name} <{email}> {date}\ndata {len}\n{message}\n",
                name = git::NAME,
                email = git::EMAIL,
                len = message.len(),
            );
            if n > 1 {
                let _ = writeln!(head, "from :{}", n - 1);
            }
            out.extend_from_slice(head.as_bytes());
            for step in pending.drain(..) {
                match step {
                    Step::Write {
                        path,
                        bytes,
                        executable,
                    } => {
                        let mode = if *executable { "100755" } else { "100644" };
                        inline(&mut out, mode, path, bytes);
                    }
                    Step::Link { path, target } => {
                        inline(&mut out, "120000", path, target.as_bytes())
                    }
                    Step::Submodule { path, commit } => {
                        out.extend_from_slice(
                            format!("M 160000 {commit} {}\n", quoted(path)).as_bytes(),
                        );
                    }
                    Step::Remove { path } => {
                        out.extend_from_slice(format!("D {}\n", quoted(path)).as_bytes());
                    }
                    Step::Commit { .. } => unreachable!("commits are not pending"),
                }
            }
            out.push(b'\n');
        }
        assert!(
            pending.is_empty(),
            "the script ends with steps it never commits: {pending:?}"
        );
        out
    }

    /// The repository this script makes, built the first time any test asks for it and
    /// cached by the script's content.
    pub fn build(&self) -> Repo {
        let stream = self.stream();
        let key = cache::key(&[FORMAT, &stream]);
        let commits = self.commits();
        let dir = cache::built("git", &key, |dir| make(dir, &stream, commits));
        let list = std::fs::read_to_string(dir.join("commits"))
            .unwrap_or_else(|e| panic!("the fixture {}: {e}", dir.display()));
        Repo {
            root: dir.join("repo"),
            key,
            commits: list.lines().map(str::to_owned).collect(),
        }
    }
}

/// A path as fast-import reads it: quoted, with C escapes, when it needs to be.
fn quoted(path: &str) -> String {
    assert!(!path.is_empty(), "an empty path in a script");
    if !path.contains(['"', '\\', '\n']) && !path.starts_with(' ') {
        return path.to_owned();
    }
    let mut out = String::from("\"");
    for c in path.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn inline(out: &mut Vec<u8>, mode: &str, path: &str, bytes: &[u8]) {
    out.extend_from_slice(
        format!("M {mode} inline {}\ndata {}\n", quoted(path), bytes.len()).as_bytes(),
    );
    out.extend_from_slice(bytes);
    out.push(b'\n');
}

/// Builds the repository in `dir/repo` and lists its commits, oldest first, in `dir/commits`.
fn make(dir: &Path, stream: &[u8], commits: usize) {
    let root = dir.join("repo");
    std::fs::create_dir(&root).unwrap_or_else(|e| panic!("mkdir {}: {e}", root.display()));
    git::git(&root, &["init", "-q", "-b", "main"]);
    // What a test's own `git commit` in a copy needs, in the repository's configuration.
    let config = root.join(".git/config");
    let mut text =
        std::fs::read_to_string(&config).unwrap_or_else(|e| panic!("{}: {e}", config.display()));
    let _ = write!(
        text,
        "[user]\n\tname = {}\n\temail = {}\n[commit]\n\tgpgsign = false\n",
        git::NAME,
        git::EMAIL
    );
    std::fs::write(&config, text).unwrap_or_else(|e| panic!("{}: {e}", config.display()));
    let mut list = String::new();
    if commits > 0 {
        let marks = dir.join("marks");
        let marks_arg = format!("--export-marks={}", marks.display());
        git::git_stdin(
            &root,
            &["fast-import", "--quiet", "--done", &marks_arg],
            &[stream, b"done\n"].concat(),
        );
        git::git(&root, &["reset", "-q", "--hard", "main"]);
        // `:<n> <sha>` lines, one per commit mark.
        let marks_text =
            std::fs::read_to_string(&marks).unwrap_or_else(|e| panic!("{}: {e}", marks.display()));
        let mut by_mark: Vec<(usize, String)> = marks_text
            .lines()
            .filter_map(|line| {
                let (mark, sha) = line.strip_prefix(':')?.split_once(' ')?;
                Some((mark.parse().ok()?, sha.to_owned()))
            })
            .collect();
        by_mark.sort();
        assert_eq!(by_mark.len(), commits, "fast-import marked every commit");
        for (_, sha) in by_mark {
            list.push_str(&sha);
            list.push('\n');
        }
        std::fs::remove_file(&marks).unwrap_or_else(|e| panic!("{}: {e}", marks.display()));
    }
    std::fs::write(dir.join("commits"), list).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    cache::read_only(&root);
}

/// A repository a script built: cached and read-only. Tests read it in place, or take a
/// [`Fixture`] (a copy) to write.
#[derive(Clone, Debug)]
pub struct Repo {
    root: PathBuf,
    pub(crate) key: String,
    commits: Vec<String>,
}

impl Repo {
    /// The cached repository's root. Never write below it.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The script's commits, oldest first.
    pub fn commits(&self) -> &[String] {
        &self.commits
    }

    /// The last commit (`HEAD`).
    pub fn head(&self) -> &str {
        self.commits
            .last()
            .expect("the script made at least one commit")
    }

    /// A copy of the repository in a temporary directory of its own.
    pub fn checkout(&self) -> Fixture {
        Fixture::copy_of(&self.root, self.commits.len() as u64)
    }

    /// A clone of the repository made by `git clone`, as a user's fresh clone is: its files and
    /// its index are written in the same second, so git holds every entry racily clean.
    pub fn fresh_clone(&self) -> Fixture {
        let dir = tempfile::tempdir().expect("a temporary directory");
        git::git(
            dir.path(),
            &[
                "clone",
                "-q",
                "--no-hardlinks",
                &self.root.to_string_lossy(),
                ".",
            ],
        );
        Fixture::adopt(dir)
    }

    /// Copies the repository into `dir` (made when missing), which the caller owns: a
    /// repository that must sit at a given path, below a server's roots say.
    pub fn checkout_at(&self, dir: &Path) {
        cache::copy(&self.root, dir);
    }

    /// A copy of the repository after `make` ran on it once for this test binary (indexing
    /// it, say): `make` runs on the first call for a `name`, on a copy of its own, and every
    /// call gets a copy of the result.
    pub fn derived(&self, name: &str, make: impl FnOnce(&Fixture)) -> Fixture {
        let dir = cache::derived(&format!("{}-{name}", self.key), |dir| {
            let fixture = self.checkout();
            make(&fixture);
            cache::copy(fixture.path(), dir);
        });
        Fixture::copy_of(&dir, self.commits.len() as u64)
    }
}
