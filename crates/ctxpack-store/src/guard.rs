//! A store never follows a symbolic link below its root.
//!
//! A repository is untrusted input, and git checks committed symlinks out as symlinks: a
//! repository that commits `.ctxpack/ledger/packs.jsonl -> ~/.bashrc` would otherwise make
//! ctxpack append to a file outside the repository. So every path ctxpack opens inside a store
//! is checked component by component below the root with `lstat`, existing files are opened
//! with `O_NOFOLLOW`, and files ctxpack creates are created exclusively (`O_EXCL`), which never
//! follows a link either. The root itself is the caller's business: a store the user named
//! may be a link (the caller decides; see the API's workspace).

use std::fs::{File, OpenOptions};
use std::path::{Component, Path, PathBuf};

use crate::error::StoreError;

/// Refuses `root.join(rel)` when it, or any directory between `root` and it, is a symbolic
/// link. A path that does not exist (yet) is fine: what exists of it has no link.
pub(crate) fn no_link(root: &Path, rel: &Path) -> Result<(), StoreError> {
    let mut path = root.to_owned();
    for component in rel.components() {
        let Component::Normal(part) = component else {
            return Err(StoreError::Corrupt {
                dir: root.to_owned(),
                detail: format!("{} is not a path inside the store", rel.display()),
            });
        };
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(StoreError::Symlink { path });
            }
            Ok(_) => {}
            // Nothing there, or a file where a directory should be: no link below it.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(());
            }
            Err(source) => return Err(StoreError::Io { path, source }),
        }
    }
    Ok(())
}

/// Refuses a symbolic link anywhere in the directory `root.join(rel)` (recursively); a missing
/// directory is fine.
pub(crate) fn no_links_below(root: &Path, rel: &Path) -> Result<(), StoreError> {
    no_link(root, rel)?;
    let dir = root.join(rel);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(StoreError::Io { path: dir, source }),
    };
    for entry in entries {
        let entry = entry.map_err(|source| StoreError::Io {
            path: dir.clone(),
            source,
        })?;
        let kind = entry.file_type().map_err(|source| StoreError::Io {
            path: entry.path(),
            source,
        })?;
        if kind.is_symlink() {
            return Err(StoreError::Symlink { path: entry.path() });
        }
        if kind.is_dir() {
            no_links_below(root, &rel.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Opens an existing file below `root` without following a link at any component.
pub(crate) fn open(root: &Path, rel: &Path, options: &mut OpenOptions) -> Result<File, StoreError> {
    no_link(root, rel)?;
    let path = root.join(rel);
    nofollow(options)
        .open(&path)
        .map_err(|source| link_or_io(path, source))
}

/// A temporary file name, `.{stem}.{pid}.{n}`, unique to this call: two threads (or
/// processes) writing the same file never share, and remove, each other's temporary file.
pub(crate) fn temp_name(stem: &str) -> String {
    static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(".{stem}.{}.{n}", std::process::id())
}

/// Creates a new file below `root` exclusively: nothing that exists at the path (a file or a
/// link planted there) is opened.
pub(crate) fn create_new(root: &Path, rel: &Path) -> Result<File, StoreError> {
    no_link(root, rel)?;
    let path = root.join(rel);
    nofollow(OpenOptions::new().write(true).create_new(true))
        .open(&path)
        .map_err(|source| link_or_io(path, source))
}

/// Creates the directory `root.join(rel)` and its parents below `root`, refusing links.
pub(crate) fn create_dirs(root: &Path, rel: &Path) -> Result<PathBuf, StoreError> {
    no_link(root, rel)?;
    let path = root.join(rel);
    std::fs::create_dir_all(&path).map_err(|source| StoreError::Io {
        path: path.clone(),
        source,
    })?;
    // A link could have appeared between the check and the creation only by a local race,
    // which is outside the threat model; check again anyway, it is cheap.
    no_link(root, rel)?;
    Ok(path)
}

#[cfg(unix)]
fn nofollow(options: &mut OpenOptions) -> &mut OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW)
}

#[cfg(not(unix))]
fn nofollow(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// `O_NOFOLLOW` on a link fails with `ELOOP`: say it was a link.
fn link_or_io(path: PathBuf, source: std::io::Error) -> StoreError {
    let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        StoreError::Symlink { path }
    } else {
        StoreError::Io { path, source }
    }
}

/// Opens a regular file below `root` for reading; `Ok(None)` when it does not exist. Anything
/// else at the path (a link, a FIFO that would block the reader forever, a device) is refused.
pub(crate) fn open_regular(root: &Path, rel: &Path) -> Result<Option<File>, StoreError> {
    no_link(root, rel)?;
    let path = root.join(rel);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StoreError::Io { path, source }),
        Ok(meta) if !meta.is_file() => {
            return Err(StoreError::Corrupt {
                dir: root.to_owned(),
                detail: format!("{} is not a regular file", path.display()),
            });
        }
        Ok(_) => {}
    }
    open(root, rel, OpenOptions::new().read(true)).map(Some)
}

/// Reads a whole regular file below `root`, as [`open_regular`] opens it.
pub(crate) fn read_regular(root: &Path, rel: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    use std::io::Read as _;
    let Some(mut file) = open_regular(root, rel)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|source| StoreError::Io {
            path: root.join(rel),
            source,
        })?;
    Ok(Some(bytes))
}

/// Refuses a symbolic link anywhere ctxpack keeps its own files in the store at `dir`: the
/// database and its `-wal`, `-shm` and `-journal` files, `.gitignore`, `writer.lock`, the
/// lexical index and the vector files (recursively), and the ledger's file and directories
/// (ledger texts are checked when one is read or written). Cheap: a handful of `lstat`s and
/// two small directories.
pub fn check_layout(dir: &Path) -> Result<(), StoreError> {
    for name in [
        "ctxpack.sqlite",
        "ctxpack.sqlite-wal",
        "ctxpack.sqlite-shm",
        "ctxpack.sqlite-journal",
        ".gitignore",
        "writer.lock",
        "ledger/packs.jsonl",
        "ledger/index.jsonl",
        "ledger/texts",
    ] {
        no_link(dir, Path::new(name))?;
    }
    for name in lexical_dirs(dir) {
        no_links_below(dir, Path::new(&name))?;
    }
    no_links_below(dir, Path::new("vectors"))
}

/// The lexical index's directory when the database names none (format 1).
pub(crate) const LEXICAL_DEFAULT: &str = "lexical";

/// The names of every lexical index directory in the store.
pub(crate) fn lexical_dirs(dir: &Path) -> Vec<String> {
    let mut names = vec![LEXICAL_DEFAULT.to_owned()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        names.extend(
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("lexical-")),
        );
    }
    names
}
