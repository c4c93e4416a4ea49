//! Directories built once and reused: by every test run while their key is unchanged
//! ([`built`]), or by every test of one test binary ([`derived`]).
//!
//! The cache lives in `target/ctxpack-fixtures/` beside the test binaries (or where
//! `CTXPACK_TEST_FIXTURES` says). A directory is built under a temporary name in the cache and
//! renamed into place when it is whole, so a reader never sees half of one; when several
//! threads or test binaries build the same key at once, one rename wins and the others' copies
//! are removed. A cached directory is never written again: a test that writes works on a copy
//! ([`copy`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// The cache's root directory (made when missing).
pub fn root() -> PathBuf {
    let root = match std::env::var_os("CTXPACK_TEST_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => target_dir()
            .map(|target| target.join("ctxpack-fixtures"))
            .unwrap_or_else(|| std::env::temp_dir().join("ctxpack-fixtures")),
    };
    std::fs::create_dir_all(&root)
        .unwrap_or_else(|e| panic!("the fixture cache {}: {e}", root.display()));
    root
}

/// The `target/` directory this test binary was built in: cargo puts test binaries in
/// `target/<profile>/deps/`.
fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    if deps.file_name()? != "deps" {
        return None;
    }
    Some(deps.parent()?.parent()?.to_owned())
}

/// The first 16 hexadecimal digits of the SHA-256 of `parts`, each length-prefixed.
pub fn key(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The directory `<root>/<kind>/<key>`, built by `build` (given an empty directory to fill)
/// the first time it is asked for, and as it was built every later time.
pub fn built(kind: &str, key: &str, build: impl FnOnce(&Path)) -> PathBuf {
    let parent = root().join(kind);
    let done = parent.join(key);
    if done.is_dir() {
        return done;
    }
    std::fs::create_dir_all(&parent)
        .unwrap_or_else(|e| panic!("the fixture cache {}: {e}", parent.display()));
    let partial = parent.join(format!(".{key}.{}", unique()));
    std::fs::create_dir(&partial)
        .unwrap_or_else(|e| panic!("the fixture cache {}: {e}", partial.display()));
    build(&partial);
    if std::fs::rename(&partial, &done).is_err() {
        // Another builder finished first (a directory is renamed only onto a missing or
        // empty one): its copy is the same, and ours goes.
        let _ = std::fs::remove_dir_all(&partial);
        assert!(
            done.is_dir(),
            "the fixture cache could not keep {}",
            done.display()
        );
    }
    done
}

/// A directory derived by `build` from what this test binary's code makes, built once per
/// test binary (its key includes the binary's size and time) and then as it was: an indexed
/// store, a collection of documents. Entries of other test binaries not used for a day are
/// removed as this one's first is made.
pub fn derived(name: &str, build: impl FnOnce(&Path)) -> PathBuf {
    let binary = binary_key();
    let kind = format!("derived/{binary}");
    let parent = root().join(&kind);
    if !parent.is_dir() {
        prune_derived(&binary);
    }
    built(&kind, name, build)
}

/// Identifies this test binary: its path, size and modification time.
fn binary_key() -> String {
    let exe = std::env::current_exe().expect("the test binary's path");
    let meta = std::fs::metadata(&exe)
        .unwrap_or_else(|e| panic!("the test binary {}: {e}", exe.display()));
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .unwrap_or_default();
    key(&[
        exe.as_os_str().as_encoded_bytes(),
        &meta.len().to_le_bytes(),
        &modified.as_nanos().to_le_bytes(),
    ])
}

fn prune_derived(keep: &str) {
    let Ok(entries) = std::fs::read_dir(root().join("derived")) else {
        return;
    };
    let day_ago = SystemTime::now() - Duration::from_secs(24 * 60 * 60);
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < day_ago);
        if old && entry.file_name() != keep {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A name no other builder in any process uses at the same time.
fn unique() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Copies the directory `from` into `to` (made when missing): files with their permission
/// bits plus the owner's write bit, symbolic links as links (never followed).
pub fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        if kind.is_dir() {
            copy(&source, &target);
        } else if kind.is_symlink() {
            let link =
                std::fs::read_link(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
            symlink(&link, &target);
        } else {
            std::fs::copy(&source, &target).unwrap_or_else(|e| {
                panic!("copying {} to {}: {e}", source.display(), target.display())
            });
            writable(&target);
        }
    }
}

#[cfg(unix)]
fn symlink(link: &Path, at: &Path) {
    std::os::unix::fs::symlink(link, at)
        .unwrap_or_else(|e| panic!("linking {}: {e}", at.display()));
}

#[cfg(not(unix))]
fn symlink(link: &Path, at: &Path) {
    panic!(
        "{} is a symbolic link to {}, which this platform's tests do not copy",
        at.display(),
        link.display()
    );
}

fn writable(path: &Path) {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut permissions = meta.permissions();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        permissions.set_mode(permissions.mode() | 0o200);
    }
    #[cfg(not(unix))]
    permissions.set_readonly(false);
    std::fs::set_permissions(path, permissions)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Makes every file below `dir` read-only, so a test that writes into a cached directory by
/// mistake fails (for users other than root).
pub fn read_only(dir: &Path) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            read_only(&entry.path());
        } else if kind.is_file() {
            let path = entry.path();
            let mut permissions = std::fs::metadata(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                .permissions();
            permissions.set_readonly(true);
            std::fs::set_permissions(&path, permissions)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}
