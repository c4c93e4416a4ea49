//! Editing one hook file: the ctxpack block's text, finding it, adding and removing it
//! byte for byte, and replacing the file atomically.

use std::io::Write;
use std::path::Path;

use super::{HOOK_LOG, HookChange, MAX_HOOK_BYTES};
use crate::error::{Error, ErrorKind, Hint, Result};

const BEGIN: &[u8] = b"# >>> ctxpack hook";
const BEGIN_INSERTED: &str = "# >>> ctxpack hook >>>\n";
const BEGIN_CREATED: &str = "# >>> ctxpack hook (ctxpack created this file) >>>\n";
const BEGIN_NEWLINE: &str = "# >>> ctxpack hook (and the newline before it) >>>\n";
const END: &[u8] = b"# <<< ctxpack hook <<<\n";
/// The first line of a hook ctxpack creates.
const CREATED_HEADER: &str = "#!/bin/sh\n";

/// Which of the block's forms a hook holds: what, besides the block, ctxpack added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// Inserted after the first line of an existing hook.
    Inserted,
    /// In a file ctxpack created, after [`CREATED_HEADER`].
    Created,
    /// Inserted after a first line that had no newline, which ctxpack added.
    Newline,
}

impl Form {
    fn begin(self) -> &'static str {
        match self {
            Form::Inserted => BEGIN_INSERTED,
            Form::Created => BEGIN_CREATED,
            Form::Newline => BEGIN_NEWLINE,
        }
    }
}

/// Where a block sits in a hook's bytes.
struct Found {
    form: Form,
    /// The bytes ctxpack added: the block, and for [`Form::Newline`] the newline before it.
    range: std::ops::Range<usize>,
    /// The block itself.
    block: std::ops::Range<usize>,
}

/// Finds the ctxpack block in `content`, which always follows a newline.
fn find_block(content: &[u8], path: &Path) -> Result<Option<Found>> {
    let Some(at) = find(content, b"\n# >>> ctxpack hook", 0) else {
        return Ok(None);
    };
    let start = at + 1;
    debug_assert!(content[start..].starts_with(BEGIN));
    let line_end = find(content, b"\n", start).map_or(content.len(), |n| n + 1);
    let line = &content[start..line_end];
    let form = [Form::Inserted, Form::Created, Form::Newline]
        .into_iter()
        .find(|f| line == f.begin().as_bytes());
    let end = find(content, END, start).map(|e| e + END.len());
    let (Some(form), Some(end)) = (form, end) else {
        return Err(conflict(
            format!(
                "the ctxpack block in {} was edited: its first or last line is not as written",
                path.display()
            ),
            "remove the lines between `# >>> ctxpack hook` and `# <<< ctxpack hook <<<` by hand",
        ));
    };
    let from = if form == Form::Newline { at } else { start };
    Ok(Some(Found {
        form,
        range: from..end,
        block: start..end,
    }))
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// A conflict with what is on disk, with advice.
pub(super) fn conflict(message: String, advice: &str) -> Error {
    Error::new(ErrorKind::Conflict, message).with_hint(Hint::Advice(advice.to_owned()))
}

/// `text` quoted for a POSIX shell.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What every block runs, for a program and a store (`None`: the default store).
pub(super) struct Settings {
    /// The program, quoted when written.
    pub(super) program: String,
    /// The store the hooks index into, when the caller named one.
    pub(super) store: Option<String>,
}

impl Settings {
    /// The block in `form`.
    fn block(&self, form: Form) -> String {
        let store_arg = if self.store.is_some() {
            " --store \"$store\""
        } else {
            ""
        };
        // Hooks run at the work tree's root, where the default store is.
        let store = self.store.as_deref().unwrap_or(".ctxpack");
        format!(
            "{begin}\
# Indexes the new HEAD in the background. Added by `ctxpack hook install`;
# `ctxpack hook uninstall` removes this block. It never blocks or fails git.
( program={program}
  store={store}
  case $program in
    */*) [ -x \"$program\" ] || exit 0 ;;
    *) command -v \"$program\" >/dev/null 2>&1 || exit 0 ;;
  esac
  unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_COMMON_DIR GIT_PREFIX
  [ -e \"$store\" ] || mkdir \"$store\"
  log=/dev/null
  if [ -d \"$store\" ] && [ ! -L \"$store\" ] && [ ! -L \"$store/{HOOK_LOG}\" ]; then
    log=\"$store/{HOOK_LOG}\"
    if [ -n \"$(find \"$log\" -size +2048 2>/dev/null)\" ]; then mv -f \"$log\" \"$log.1\"; fi
  fi
  trap '' HUP
  \"$program\" index --wait{store_arg} </dev/null >>\"$log\" 2>&1 &
) </dev/null >/dev/null 2>&1 || :
# <<< ctxpack hook <<<
",
            begin = form.begin(),
            program = quote(&self.program),
            store = quote(store),
        )
    }
}

/// Reads a hook that may exist: `None` when it does not; refused when it is not a regular
/// file, is a link, or is too large.
fn read_hook(path: &Path) -> Result<Option<(Vec<u8>, std::fs::Permissions)>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, &e)),
    };
    if meta.file_type().is_symlink() {
        return Err(conflict(
            format!(
                "{} is a symbolic link, which ctxpack does not write through",
                path.display()
            ),
            "add `ctxpack index --wait >/dev/null 2>&1 &` to the script it leads to yourself",
        ));
    }
    if !meta.is_file() {
        return Err(conflict(
            format!("{} is not a regular file", path.display()),
            "move it out of the way, then install again",
        ));
    }
    if meta.len() > MAX_HOOK_BYTES {
        return Err(conflict(
            format!(
                "{} is larger than {MAX_HOOK_BYTES} bytes, more than a hook ctxpack edits",
                path.display()
            ),
            "add `ctxpack index --wait >/dev/null 2>&1 &` to it yourself",
        ));
    }
    let content = std::fs::read(path).map_err(|e| Error::io(path, &e))?;
    Ok(Some((content, meta.permissions())))
}

/// What installing into `path` changes, and the new content when it changes anything.
pub(super) fn plan_install(
    path: &Path,
    settings: &Settings,
) -> Result<(HookChange, Option<Vec<u8>>)> {
    let Some((content, permissions)) = read_hook(path)? else {
        let content = format!("{CREATED_HEADER}{}", settings.block(Form::Created));
        return Ok((HookChange::Created, Some(content.into_bytes())));
    };
    if let Some(found) = find_block(&content, path)? {
        let block = settings.block(found.form);
        if content[found.block.clone()] == *block.as_bytes() {
            return Ok((HookChange::Unchanged, None));
        }
        let mut updated = content[..found.block.start].to_vec();
        updated.extend_from_slice(block.as_bytes());
        updated.extend_from_slice(&content[found.block.end..]);
        return Ok((HookChange::Updated, Some(updated)));
    }
    if !is_shell_script(&content) {
        return Err(conflict(
            format!(
                "{} is not a shell script (its first line does not start it with sh, bash, dash, zsh or ksh), so ctxpack cannot add to it",
                path.display()
            ),
            "make it run `ctxpack index --wait` in the background yourself (output to a log, never failing), or move it aside and install again",
        ));
    }
    if !is_executable(&permissions) {
        return Err(conflict(
            format!(
                "{} is not executable, so git does not run it",
                path.display()
            ),
            "make it executable (chmod +x) or remove it, then install again",
        ));
    }
    let mut updated = Vec::with_capacity(content.len() + 1024);
    match find(&content, b"\n", 0) {
        Some(newline) => {
            updated.extend_from_slice(&content[..=newline]);
            updated.extend_from_slice(settings.block(Form::Inserted).as_bytes());
            updated.extend_from_slice(&content[newline + 1..]);
        }
        None => {
            updated.extend_from_slice(&content);
            updated.push(b'\n');
            updated.extend_from_slice(settings.block(Form::Newline).as_bytes());
        }
    }
    Ok((HookChange::Added, Some(updated)))
}

/// What uninstalling from `path` does: `None` nothing, `Some(None)` delete the file,
/// `Some(Some(content))` write `content`.
pub(super) fn plan_uninstall(path: &Path) -> Result<Option<Option<Vec<u8>>>> {
    // A link or anything else install refuses never holds a block ctxpack wrote.
    let content = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => match read_hook(path)? {
            Some((content, _)) => content,
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    let Some(found) = find_block(&content, path)? else {
        return Ok(None);
    };
    let mut rest = content[..found.range.start].to_vec();
    rest.extend_from_slice(&content[found.range.end..]);
    if found.form == Form::Created && rest == CREATED_HEADER.as_bytes() {
        return Ok(Some(None));
    }
    Ok(Some(Some(rest)))
}

/// Whether a hook's first line starts a POSIX-style shell.
fn is_shell_script(content: &[u8]) -> bool {
    let line = content.split(|&b| b == b'\n').next().unwrap_or_default();
    let Some(command) = line.strip_prefix(b"#!") else {
        return false;
    };
    let Ok(command) = std::str::from_utf8(command) else {
        return false;
    };
    let mut words = command.split_whitespace();
    let Some(mut interpreter) = words.next() else {
        return false;
    };
    if base_name(interpreter) == "env" {
        match words.find(|w| !w.starts_with('-')) {
            Some(next) => interpreter = next,
            None => return false,
        }
    }
    matches!(
        base_name(interpreter),
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash"
    )
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(unix)]
fn is_executable(permissions: &std::fs::Permissions) -> bool {
    use std::os::unix::fs::PermissionsExt;
    permissions.mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Permissions) -> bool {
    true
}

/// Replaces `path` with `content` atomically: a new file in the same directory, renamed over
/// it (a rename replaces a link rather than following it). The file keeps the permissions of
/// the one it replaces; a new hook is executable.
pub(super) fn write_atomically(path: &Path, content: &[u8]) -> Result<()> {
    let dir = path.parent().expect("a hook path has a directory");
    let name = path
        .file_name()
        .expect("a hook path has a name")
        .to_string_lossy();
    let permissions = std::fs::symlink_metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.permissions());
    let mut attempt = 0u32;
    let (temp, mut file) = loop {
        let temp = dir.join(format!(".{name}.ctxpack-{}-{attempt}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => break (temp, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(e) => return Err(Error::io(&temp, &e)),
        }
    };
    let written = (|| {
        file.write_all(content)?;
        match permissions {
            Some(permissions) => file.set_permissions(permissions)?,
            None => set_executable(&file)?,
        }
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(Error::io(path, &e));
    }
    Ok(())
}

#[cfg(unix)]
fn set_executable(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn set_executable(_: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_are_recognised_by_their_first_line() {
        for yes in [
            "#!/bin/sh\n",
            "#!/bin/bash -e\nx",
            "#! /usr/bin/env bash\n",
            "#!/usr/bin/env -S zsh -f\n",
            "#!/bin/dash",
        ] {
            assert!(is_shell_script(yes.as_bytes()), "{yes:?}");
        }
        for no in [
            "",
            "echo hi\n",
            "#!/usr/bin/env python3\n",
            "#!/usr/bin/perl\n",
            "#!\n",
        ] {
            assert!(!is_shell_script(no.as_bytes()), "{no:?}");
        }
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(quote("a'b"), r"'a'\''b'");
    }

    #[test]
    fn a_block_is_found_and_removed_exactly() {
        let settings = Settings {
            program: "/x/ctxpack".into(),
            store: None,
        };
        let original = b"#!/bin/sh\r\necho one\nexit 3".to_vec();
        let mut with = b"#!/bin/sh\r\n".to_vec();
        with.extend_from_slice(settings.block(Form::Inserted).as_bytes());
        with.extend_from_slice(b"echo one\nexit 3");
        let found = find_block(&with, Path::new("h"))
            .expect("well formed")
            .expect("found");
        let mut rest = with[..found.range.start].to_vec();
        rest.extend_from_slice(&with[found.range.end..]);
        assert_eq!(rest, original);
    }
}
