//! Hit texts, stored once by their SHA-256 beside the records, and reclaimed by `gc` while
//! the records that name them stay.

use std::collections::{BTreeSet, HashSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use crate::error::StoreError;
use crate::guard;

use super::{Ledger, RECLAIMED_TEXT, io, is_hash};
use crate::digest::sha256_hex;

impl Ledger {
    /// Stores `text` under its `hash` unless a text is already there.
    pub(super) fn put_text(&self, hash: &str, text: &str) -> Result<(), StoreError> {
        let rel = Self::text_path(hash);
        guard::no_link(&self.root, &rel)?;
        let path = self.root.join(&rel);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Ok(());
        }
        let parent = rel.parent().expect("text paths have a parent");
        guard::create_dirs(&self.root, parent)?;
        // Write beside, then rename: a text file is whole or absent. The temporary name is
        // created exclusively (a stale one from a crash is removed first: unlinking never
        // follows a link).
        let tmp = parent.join(guard::temp_name(hash));
        let _ = std::fs::remove_file(self.root.join(&tmp));
        let mut file = guard::create_new(&self.root, &tmp)?;
        file.write_all(text.as_bytes())
            .map_err(io(&self.root.join(&tmp)))?;
        drop(file);
        std::fs::rename(self.root.join(&tmp), &path).map_err(io(&path))?;
        Ok(())
    }

    /// The list of texts `gc` reclaimed, relative to the store.
    fn reclaimed_file() -> &'static Path {
        Path::new("ledger/reclaimed")
    }

    /// The hashes of the texts `gc` reclaimed, read once per `Ledger` (a replay or a `verify`
    /// of many records with reclaimed texts reads the list once).
    fn reclaimed(&self) -> Result<&HashSet<String>, StoreError> {
        if let Some(set) = self.reclaimed.get() {
            return Ok(set);
        }
        let bytes = guard::read_regular(&self.root, Self::reclaimed_file())?.unwrap_or_default();
        let set = String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| is_hash(line))
            .map(str::to_owned)
            .collect();
        Ok(self.reclaimed.get_or_init(|| set))
    }

    /// Deletes the texts that only packs of snapshots outside `indexed` name (and reports how
    /// many; `dry_run` deletes nothing). Packs of no snapshot (documents, `select`) keep theirs. Their records stay, and each such text reads as
    /// [`RECLAIMED_TEXT`]: the hashes are listed in `ledger/reclaimed` (and flushed) before any
    /// file is deleted, so a run stopped part way leaves texts that are listed and still there,
    /// never texts that are gone and unlisted.
    pub fn reclaim_texts(
        &mut self,
        indexed: &HashSet<&str>,
        dry_run: bool,
    ) -> Result<u64, StoreError> {
        let contents = self.read()?;
        let mut keep: HashSet<&str> = HashSet::new();
        let mut doomed: BTreeSet<&str> = BTreeSet::new();
        for record in &contents.records {
            let gone = record
                .snapshot
                .as_ref()
                .is_some_and(|s| !indexed.contains(s.resolved_sha.as_str()));
            let texts = record
                .hits
                .iter()
                .map(|h| h.text.as_str())
                .chain(record.output.as_deref());
            for text in texts.filter(|t| is_hash(t)) {
                if gone {
                    doomed.insert(text);
                } else {
                    keep.insert(text);
                }
            }
        }
        let doomed: Vec<&str> = doomed
            .into_iter()
            .filter(|t| !keep.contains(t))
            .filter(|t| std::fs::symlink_metadata(self.root.join(Self::text_path(t))).is_ok())
            .collect();
        if dry_run || doomed.is_empty() {
            return Ok(doomed.len() as u64);
        }
        guard::create_dirs(&self.root, Path::new("ledger"))?;
        let list = self.root.join(Self::reclaimed_file());
        let mut file = guard::open(
            &self.root,
            Self::reclaimed_file(),
            OpenOptions::new().create(true).append(true),
        )?;
        let mut lines = String::new();
        for text in &doomed {
            lines.push_str(text);
            lines.push('\n');
        }
        // A line torn by a crash is not a hash, and is skipped on reading.
        file.write_all(format!("\n{lines}").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(io(&list))?;
        // Read again on the next missing text.
        self.reclaimed = std::sync::OnceLock::new();
        for text in &doomed {
            let rel = Self::text_path(text);
            guard::no_link(&self.root, &rel)?;
            let path = self.root.join(&rel);
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
        Ok(doomed.len() as u64)
    }

    /// A stored text by hash. Only a SHA-256 in lowercase hex names a text, so a tampered
    /// record cannot point outside the ledger; the content must match its hash. A text that
    /// `gc` reclaimed reads as [`RECLAIMED_TEXT`].
    pub fn text(&self, hash: &str) -> Result<String, StoreError> {
        if !is_hash(hash) {
            return Err(StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: format!("a ledger record names the text `{hash}`, which is not a SHA-256"),
            });
        }
        let unreadable = |why: String| StoreError::Corrupt {
            dir: self.dir.clone(),
            detail: format!("ledger text {hash} cannot be read: {why}"),
        };
        let bytes = match guard::read_regular(&self.root, &Self::text_path(hash)) {
            Ok(Some(bytes)) => bytes,
            Ok(None) if self.reclaimed()?.contains(hash) => return Ok(RECLAIMED_TEXT.to_owned()),
            Ok(None) => return Err(unreadable("it is missing".into())),
            Err(e @ StoreError::Symlink { .. }) => return Err(e),
            Err(e) => return Err(unreadable(e.to_string())),
        };
        let text = String::from_utf8(bytes).map_err(|_| unreadable("it is not UTF-8".into()))?;
        if sha256_hex(text.as_bytes()) != hash {
            return Err(StoreError::Corrupt {
                dir: self.dir.clone(),
                detail: format!("ledger text {hash} does not match its hash"),
            });
        }
        Ok(text)
    }
}
