//! Git hooks that index new commits in the background.
//!
//! [`Workspace::install_hooks`] adds a delimited block to the repository's `post-commit`,
//! `post-checkout` and `post-merge` hooks (in the directory git runs hooks from, so
//! `core.hooksPath` is respected). The block starts `ctxpack index` detached, with its output
//! in `hook.log` in the store, and never blocks or fails git: it exits 0 whatever happens,
//! including when the ctxpack program is gone. [`Workspace::uninstall_hooks`] removes exactly
//! what was added: a hook that existed before is restored byte for byte, and a hook file is
//! deleted only when ctxpack created it.
//!
//! The block goes right after an existing hook's first (`#!`) line rather than at its end, so
//! it runs even when the hook ends with `exit` or `exec`, and the hook's own exit status (which
//! becomes `git checkout`'s for `post-checkout`) is left alone. It runs in a subshell, so it
//! sets nothing the rest of the hook sees.
//!
//! ```no_run
//! use ctxpack_api::hooks::{HookInstallRequest, HookUninstallRequest};
//! use ctxpack_api::{Workspace, WorkspaceOptions};
//!
//! let workspace = Workspace::open(WorkspaceOptions::default())?;
//! let installed = workspace.install_hooks(&HookInstallRequest::default())?;
//! println!("{installed}");
//! workspace.uninstall_hooks(&HookUninstallRequest::default())?;
//! # Ok::<(), ctxpack_api::Error>(())
//! ```

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::error::{Error, ErrorKind, Result};
use crate::workspace::{Workspace, resolve};

mod edit;

use edit::{Settings, conflict, plan_install, plan_uninstall, write_atomically};

/// A git hook ctxpack installs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookName {
    /// `post-commit`: after `git commit`.
    PostCommit,
    /// `post-checkout`: after `git checkout` and `git switch`.
    PostCheckout,
    /// `post-merge`: after `git merge` and `git pull`.
    PostMerge,
}

impl HookName {
    /// Every hook ctxpack installs.
    pub const ALL: [HookName; 3] = [
        HookName::PostCommit,
        HookName::PostCheckout,
        HookName::PostMerge,
    ];

    /// The hook's file name: `post-commit`, `post-checkout`, `post-merge`.
    pub fn name(self) -> &'static str {
        match self {
            HookName::PostCommit => "post-commit",
            HookName::PostCheckout => "post-checkout",
            HookName::PostMerge => "post-merge",
        }
    }
}

/// Install the hooks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookInstallRequest {
    /// The ctxpack program the hooks run: a path (made absolute), or a bare name looked up on
    /// `PATH` when the hook runs. Default: `ctxpack`. When it is missing, the hooks do nothing.
    pub program: PathBuf,
    /// Which hooks. Default: all of [`HookName::ALL`].
    pub hooks: Vec<HookName>,
}

impl Default for HookInstallRequest {
    fn default() -> Self {
        HookInstallRequest {
            program: PathBuf::from("ctxpack"),
            hooks: HookName::ALL.to_vec(),
        }
    }
}

/// Remove what [`Workspace::install_hooks`] added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookUninstallRequest {
    /// Which hooks. Default: all of [`HookName::ALL`].
    pub hooks: Vec<HookName>,
}

impl Default for HookUninstallRequest {
    fn default() -> Self {
        HookUninstallRequest {
            hooks: HookName::ALL.to_vec(),
        }
    }
}

/// What happened to one hook file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookChange {
    /// The hook did not exist: ctxpack created it.
    Created,
    /// The block was added to an existing hook.
    Added,
    /// The block was there with other settings (another program or store) and was replaced.
    Updated,
    /// The block was already there as it would be written: nothing changed.
    Unchanged,
    /// The block was removed, restoring the hook as it was before.
    Restored,
    /// The hook, which ctxpack had created, was deleted.
    Deleted,
    /// There was no ctxpack block: nothing changed.
    Absent,
}

impl HookChange {
    fn describe(self) -> &'static str {
        match self {
            HookChange::Created => "created",
            HookChange::Added => "added to the existing hook",
            HookChange::Updated => "updated",
            HookChange::Unchanged => "already installed",
            HookChange::Restored => "removed; the hook is as it was before",
            HookChange::Deleted => "deleted (ctxpack had created it)",
            HookChange::Absent => "not installed",
        }
    }
}

/// One hook file and what happened to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HookOutcome {
    /// The hook.
    pub hook: HookName,
    /// Its file.
    pub path: PathBuf,
    /// What happened.
    pub change: HookChange,
}

/// What installing or uninstalling the hooks did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookReport {
    /// The directory git runs the repository's hooks from.
    pub hooks_dir: PathBuf,
    /// One outcome per hook asked for, in the order asked.
    pub hooks: Vec<HookOutcome>,
}

impl HookReport {
    /// The report as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a hook report serializes")
    }
}

/// One line per hook: its file and what happened to it.
impl fmt::Display for HookReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for outcome in &self.hooks {
            writeln!(
                f,
                "{}: {}",
                outcome.path.display(),
                outcome.change.describe()
            )?;
        }
        Ok(())
    }
}

/// The largest hook file ctxpack reads: larger ones are refused, never truncated.
pub const MAX_HOOK_BYTES: u64 = 1024 * 1024;

/// The name of the hooks' log file in the store directory.
pub const HOOK_LOG: &str = "hook.log";

/// Refuses a path a hook would carry that is not plain text on one line.
fn plain(field: &str, path: &Path) -> Result<String> {
    match path.to_str() {
        Some(text) if !text.is_empty() && !text.chars().any(char::is_control) => {
            Ok(text.to_owned())
        }
        _ => Err(Error::invalid_field(
            field,
            format!(
                "{} cannot be written into a hook: it must be UTF-8 with no control characters",
                path.display()
            ),
        )),
    }
}

/// Where the repository's hooks live, checked.
struct HooksDir {
    /// The directory, resolved (no symbolic link in it).
    dir: PathBuf,
}

impl Workspace {
    /// Adds ctxpack's block to the hooks asked for (creating a hook that does not exist), in
    /// the directory git runs hooks from (`core.hooksPath` when set). Running it again
    /// changes nothing; with another program or store it replaces the block.
    ///
    /// Every hook is checked before any is written. Refused with
    /// [`ErrorKind::Conflict`](crate::ErrorKind::Conflict) and advice, writing nothing: a
    /// hook that is not a shell script (no `#!` line naming `sh`, `bash`, `dash`, `zsh` or
    /// `ksh`), is not executable, is a symbolic link or is larger than [`MAX_HOOK_BYTES`];
    /// and a hooks directory outside the repository (a `core.hooksPath` shared with other
    /// repositories, or a symbolic link that leads out). Files are replaced atomically,
    /// keeping their permissions. `git` must be on the `PATH`: it names the hooks directory.
    pub fn install_hooks(&self, request: &HookInstallRequest) -> Result<HookReport> {
        self.require_write("installing hooks")?;
        let program = if request.program.components().count() > 1 {
            std::path::absolute(&request.program)
                .map_err(|e| Error::invalid_field("program", e.to_string()))?
        } else {
            request.program.clone()
        };
        let settings = Settings {
            program: plain("program", &program)?,
            store: if self.store_named() {
                Some(plain("store", self.store_dir()?)?)
            } else {
                None
            },
        };
        let hooks = self.hooks_dir()?;
        // Plan every hook first: nothing is written unless all of them can be.
        let mut plans = Vec::new();
        for hook in unique(&request.hooks) {
            let path = hooks.dir.join(hook.name());
            let (change, content) = plan_install(&path, &settings)?;
            plans.push((hook, path, change, content));
        }
        std::fs::create_dir_all(&hooks.dir)
            .map_err(|e| Error::io(&hooks.dir, &e).context("cannot create the hooks directory"))?;
        let mut outcomes = Vec::new();
        for (hook, path, change, content) in plans {
            if let Some(content) = content {
                write_atomically(&path, &content)?;
            }
            outcomes.push(HookOutcome { hook, path, change });
        }
        Ok(HookReport {
            hooks_dir: hooks.dir,
            hooks: outcomes,
        })
    }

    /// Removes ctxpack's block from the hooks asked for: a hook that existed before is left
    /// byte for byte as it was, and one ctxpack created is deleted (unless lines were added
    /// to it since, which are kept). A hook without the block is not touched.
    pub fn uninstall_hooks(&self, request: &HookUninstallRequest) -> Result<HookReport> {
        self.require_write("removing hooks")?;
        let hooks = self.hooks_dir()?;
        let mut plans = Vec::new();
        for hook in unique(&request.hooks) {
            let path = hooks.dir.join(hook.name());
            let plan = plan_uninstall(&path)?;
            plans.push((hook, path, plan));
        }
        let mut outcomes = Vec::new();
        for (hook, path, plan) in plans {
            let change = match plan {
                None => HookChange::Absent,
                Some(None) => {
                    std::fs::remove_file(&path).map_err(|e| Error::io(&path, &e))?;
                    HookChange::Deleted
                }
                Some(Some(content)) => {
                    write_atomically(&path, &content)?;
                    HookChange::Restored
                }
            };
            outcomes.push(HookOutcome { hook, path, change });
        }
        Ok(HookReport {
            hooks_dir: hooks.dir,
            hooks: outcomes,
        })
    }

    /// The directory git runs this repository's hooks from, as git itself reports it, and
    /// refused unless it is inside the work tree or the git directory.
    fn hooks_dir(&self) -> Result<HooksDir> {
        let repo = self.repo()?;
        let root = repo.root();
        let out = Command::new("git")
            .arg("-C")
            .arg(&root)
            // Relative paths, as written: an absolute path would have its links resolved.
            .args(["rev-parse", "--git-common-dir", "--git-path", "hooks"])
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_COMMON_DIR")
            .env_remove("GIT_INDEX_FILE")
            .output()
            .map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("cannot run git to find the hooks directory: {e}"),
                )
            })?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let (Some(common), Some(hooks), true) = (lines.next(), lines.next(), out.status.success())
        else {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "git could not name the hooks directory of {}: {}",
                    root.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ));
        };
        let lexical = normalize(&root.join(hooks));
        let roots: Vec<PathBuf> = [root.clone(), root.join(common)]
            .iter()
            .map(|r| resolve(&normalize(r)))
            .collect();
        let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
        let resolved = resolve(&lexical);
        if !inside(&resolved) {
            let how = if inside(&lexical) {
                format!(
                    "{} leads through a symbolic link to {}",
                    lexical.display(),
                    resolved.display()
                )
            } else {
                format!("{} (core.hooksPath)", lexical.display())
            };
            return Err(conflict(
                format!("the hooks directory is outside the repository: {how}"),
                "hooks there may serve other repositories; add `ctxpack index --wait &` to them yourself, or point core.hooksPath inside this repository",
            ));
        }
        Ok(HooksDir { dir: resolved })
    }
}

/// The hooks asked for, each once, in the order first asked.
fn unique(hooks: &[HookName]) -> Vec<HookName> {
    let mut seen = Vec::new();
    for &hook in hooks {
        if !seen.contains(&hook) {
            seen.push(hook);
        }
    }
    seen
}

/// `path` with `.` and `..` components folded lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
