//! `--worktree`: the working tree as it is now, overlaid on the HEAD snapshot without writing
//! a snapshot. Changed and new files are read (never through a link, within the size limit),
//! chunked and masked as indexing does, and searched in place of the snapshot's files at their
//! paths; deleted files leave the search. Ignore rules are the working tree's own: git's
//! (`.gitignore`, `.git/info/exclude`) decide what is untracked, and `.ctxpackignore` files —
//! as they are now — decide what is packed, for overlaid and committed files alike.

use std::collections::BTreeMap;

use ctxpack_index::git::{EntryKind, Repo, TreeEntry};
use ctxpack_index::ignore::{IGNORE_FILE, IgnoreRules};
use ctxpack_index::indexer::{IndexOptions, prepare_text};
use ctxpack_index::retrieve::{Overlay, OverlayChunk};

use crate::error::Result;

/// The working tree's overlay on one snapshot, and what it counted.
#[derive(Debug, Default)]
pub(crate) struct WorktreeOverlay {
    /// What retrieval searches in place of the snapshot's files.
    pub overlay: Overlay,
    /// Files HEAD has that the working tree changed.
    pub modified: usize,
    /// Files HEAD does not have.
    pub added: usize,
    /// Files HEAD has that the working tree deleted.
    pub deleted: usize,
    /// Changed files not packed, by reason.
    pub skipped: BTreeMap<String, u64>,
}

impl WorktreeOverlay {
    /// The warning a pack of the working tree carries.
    pub(crate) fn notice(&self, sha: &str) -> String {
        let short = sha.get(..7).unwrap_or(sha);
        let mut notice = format!(
            "packed the working tree: {} modified, {} new and {} deleted files over {short}; \
             their hits are cited @worktree",
            self.modified, self.added, self.deleted
        );
        if !self.skipped.is_empty() {
            let skipped: Vec<String> = self
                .skipped
                .iter()
                .map(|(reason, n)| format!("{n} {reason}"))
                .collect();
            notice.push_str(&format!(" (not packed: {})", skipped.join(", ")));
        }
        notice
    }
}

/// The overlay of the working tree of `repo` on its HEAD commit `sha`.
pub(crate) fn overlay(repo: &Repo, sha: &str, options: &IndexOptions) -> Result<WorktreeOverlay> {
    let changes = repo.worktree_changes(sha, options.max_file_bytes)?;
    let entries = repo.tree_entries(sha)?;
    let mut out = WorktreeOverlay {
        modified: changes.modified,
        added: changes.added,
        deleted: changes.deleted.len(),
        skipped: changes.skipped.clone(),
        ..WorktreeOverlay::default()
    };
    let replaced = &mut out.overlay.replaced;
    replaced.extend(changes.deleted.iter().cloned());
    replaced.extend(changes.files.keys().cloned());

    // The ignore rules as the working tree has them, and as HEAD had them.
    let head_rules = ignore_files(repo, &entries, None)?;
    let now_rules = ignore_files(repo, &entries, Some(&changes))?;
    let (before, now) = (rules(&head_rules), rules(&now_rules));
    let mut packed: Vec<(String, Vec<u8>)> = Vec::new();
    if head_rules != now_rules {
        // A changed `.ctxpackignore` also moves committed files in or out of the pack.
        let (mut before, mut now) = (before.matcher(), now.matcher());
        for entry in &entries {
            if entry.kind != EntryKind::File || replaced.contains(&entry.path) {
                continue;
            }
            match (
                before.is_ignored(&entry.raw_path),
                now.is_ignored(&entry.raw_path),
            ) {
                (false, true) => {
                    replaced.insert(entry.path.clone());
                }
                (true, false) => {
                    replaced.insert(entry.path.clone());
                    match repo.blob_size_if_present(&entry.id)? {
                        Some(size) if size <= options.max_file_bytes => {
                            packed.push((entry.path.clone(), repo.read_blob(&entry.id)?));
                        }
                        Some(_) => count(&mut out.skipped, "too_large"),
                        None => count(&mut out.skipped, "object_not_present"),
                    }
                }
                _ => {}
            }
        }
    }
    let mut now = now.matcher();
    let committed: std::collections::HashSet<&str> =
        entries.iter().map(|e| e.path.as_str()).collect();
    for (path, file) in &changes.files {
        if now.is_ignored(&file.raw_path) {
            count(&mut out.skipped, "ignored");
            continue;
        }
        // An untracked file named like a credential store is never read, even when no ignore
        // rule names it: masking finds secrets by their shape, and these files hold secrets of
        // any shape. A committed one is evidence like any other file.
        if !committed.contains(path.as_str()) && is_secret_file(path) {
            count(&mut out.skipped, "secret_file");
            continue;
        }
        if let Some(bytes) = &file.bytes {
            packed.push((path.clone(), bytes.clone()));
        }
    }
    packed.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, bytes) in packed {
        match prepare_text(&path, &bytes, options) {
            Ok(chunks) => out
                .overlay
                .chunks
                .extend(chunks.into_iter().map(|chunk| OverlayChunk {
                    path: path.clone(),
                    chunk,
                })),
            Err(reason) => count(&mut out.skipped, reason),
        }
    }
    Ok(out)
}

fn count(skipped: &mut BTreeMap<String, u64>, reason: &str) {
    *skipped.entry(reason.to_owned()).or_default() += 1;
}

/// The `.ctxpackignore` files as `(directory, content)`: HEAD's, or with `changes` the
/// working tree's (changed ones read from it, deleted ones gone, new ones added).
fn ignore_files(
    repo: &Repo,
    entries: &[TreeEntry],
    changes: Option<&ctxpack_index::worktree::WorktreeChanges>,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut files = BTreeMap::new();
    for entry in entries {
        if entry.kind == EntryKind::File && is_ignore_file(&entry.raw_path) {
            files.insert(
                entry.path.clone(),
                (entry.raw_path.clone(), repo.read_blob(&entry.id)?),
            );
        }
    }
    if let Some(changes) = changes {
        for deleted in &changes.deleted {
            files.remove(deleted);
        }
        for (path, file) in &changes.files {
            if is_ignore_file(&file.raw_path) {
                match &file.bytes {
                    Some(bytes) => {
                        files.insert(path.clone(), (file.raw_path.clone(), bytes.clone()));
                    }
                    None => {
                        files.remove(path);
                    }
                }
            }
        }
    }
    Ok(files
        .into_values()
        .map(|(raw, content)| {
            let dir = match raw.iter().rposition(|&b| b == b'/') {
                Some(slash) => raw[..slash].to_vec(),
                None => Vec::new(),
            };
            (dir, content)
        })
        .collect())
}

fn is_ignore_file(raw_path: &[u8]) -> bool {
    let name = match raw_path.iter().rposition(|&b| b == b'/') {
        Some(slash) => &raw_path[slash + 1..],
        None => raw_path,
    };
    name == IGNORE_FILE.as_bytes()
}

fn rules(files: &[(Vec<u8>, Vec<u8>)]) -> IgnoreRules {
    IgnoreRules::new(files.iter().map(|(d, c)| (d.as_slice(), c.as_slice())))
}

/// Whether `path` names a file that conventionally holds credentials: `.env` and `.env.*`
/// (but not `.env.example`, `.env.sample` or `.env.template`), private keys (`*.pem`, `*.key`,
/// `id_rsa`, `id_ecdsa`, `id_ed25519`), `.netrc` and `.pgpass`.
fn is_secret_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if let Some(rest) = name.strip_prefix(".env") {
        return rest.is_empty()
            || (rest.starts_with('.')
                && !matches!(rest, ".example" | ".sample" | ".template" | ".dist"));
    }
    matches!(
        name,
        "id_rsa" | "id_ecdsa" | "id_ed25519" | "id_dsa" | ".netrc" | ".pgpass"
    ) || name.ends_with(".pem")
        || name.ends_with(".key")
}

#[cfg(test)]
mod tests {
    use super::is_secret_file;

    #[test]
    fn credential_files_are_recognised_by_name() {
        for secret in [
            ".env",
            "app/.env",
            ".env.local",
            ".env.production",
            "certs/server.pem",
            "tls.key",
            "home/id_rsa",
            "id_ed25519",
            ".netrc",
            ".pgpass",
        ] {
            assert!(is_secret_file(secret), "{secret}");
        }
        for plain in [
            ".env.example",
            ".env.sample",
            "env.rs",
            ".envrc.md",
            "keys.rs",
            "src/key.rs",
            "id_rsa.pub",
            "docs/pem.md",
            ".environment",
        ] {
            assert!(!is_secret_file(plain), "{plain}");
        }
    }
}
