//! What a commit lists: its whole tree, or its changes against the nearest indexed ancestor,
//! with the ignore rules it holds and each entry's blob read or skipped.

use std::collections::BTreeMap;

use ctxpack_store::{NewFile, Store};

use crate::error::IndexError;
use crate::git::{EntryKind, ObjectReader, Repo, TreeChange, TreeEntry};
use crate::ignore::{IGNORE_FILE, IgnoreRules};

use super::{IndexOptions, IndexPhase, OBJECT_NOT_PRESENT, Plan, Reporter, STORED_CHUNKER};

/// What a commit's per-file decisions depended on besides each file's own bytes: the stored
/// chunker, the default ignore rules and the commit's `.ctxpackignore` files. A child whose
/// diff touches none of them decides its unchanged files as its parent did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Basis {
    chunker: u32,
    defaults: String,
    /// `(directory's raw path, blob id)` of every ignore file, by path.
    ignore_files: Vec<(Vec<u8>, String)>,
}

impl Basis {
    fn new(ignore_files: Vec<(Vec<u8>, String)>) -> Basis {
        Basis {
            chunker: STORED_CHUNKER,
            defaults: ctxpack_store::checksum(crate::ignore::DEFAULT_PATTERNS.as_bytes()),
            ignore_files,
        }
    }

    /// One line per fact; the directory in hex, so any bytes survive.
    pub(super) fn encode(&self) -> String {
        let mut out = format!("chunker {}\ndefaults {}\n", self.chunker, self.defaults);
        for (dir, blob) in &self.ignore_files {
            let hex: String = dir.iter().map(|b| format!("{b:02x}")).collect();
            out.push_str(&format!("ignore {blob} {hex}\n"));
        }
        out
    }

    /// The basis `text` records, or `None` when it is not one this build wrote.
    fn decode(text: &str) -> Option<Basis> {
        let mut lines = text.lines();
        let chunker = lines.next()?.strip_prefix("chunker ")?.parse().ok()?;
        let defaults = lines.next()?.strip_prefix("defaults ")?.to_owned();
        let mut ignore_files = Vec::new();
        for line in lines {
            let (blob, hex) = line.strip_prefix("ignore ")?.split_once(' ')?;
            if hex.len() % 2 != 0 {
                return None;
            }
            let dir = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                .collect::<Option<Vec<u8>>>()?;
            ignore_files.push((dir, blob.to_owned()));
        }
        Some(Basis {
            chunker,
            defaults,
            ignore_files,
        })
    }

    fn rules(&self, repo: &Repo) -> Result<IgnoreRules, IndexError> {
        let contents = self
            .ignore_files
            .iter()
            .map(|(dir, blob)| Ok((dir.as_slice(), repo.read_blob(blob)?)))
            .collect::<Result<Vec<_>, IndexError>>()?;
        Ok(IgnoreRules::new(
            contents.iter().map(|(dir, text)| (*dir, text.as_slice())),
        ))
    }
}

/// The indexed snapshot of a commit's nearest first-parent ancestor.
pub(super) struct Parent {
    pub(super) row: ctxpack_store::SnapshotRow,
    /// The changes from it, when its decisions carry over (see [`Basis`]): `None` when the
    /// child must be walked whole (it is then still stored as changes against the parent).
    pub(super) changes: Option<(Basis, Vec<TreeChange>)>,
}

/// How many first parents back indexing looks for an indexed snapshot to start from.
pub const ANCESTOR_STEPS: usize = 100;

/// The indexed snapshot of the commit's nearest first-parent ancestor, at most
/// [`ANCESTOR_STEPS`] back (a hook that skipped some commits still finds the last one it
/// indexed); a shallow boundary or a missing commit ends the search quietly.
pub(super) fn indexed_parent(
    repo: &Repo,
    store: &Store,
    sha: &str,
) -> Result<Option<Parent>, IndexError> {
    let mut next = repo.commit_info(sha)?.parents.into_iter().next();
    let mut found = None;
    for _ in 0..ANCESTOR_STEPS {
        let Some(commit) = next else {
            break;
        };
        if let Some(row) = store.snapshot(&commit)? {
            found = Some((commit, row));
            break;
        }
        next = repo
            .commit_info(&commit)
            .ok()
            .and_then(|info| info.parents.into_iter().next());
    }
    let Some((first, row)) = found else {
        return Ok(None);
    };
    let basis = store
        .snapshot_basis(&first)?
        .and_then(|text| Basis::decode(&text))
        // Written by this chunker with these default rules.
        .filter(|b| *b == Basis::new(b.ignore_files.clone()))
        // A blob a partial clone lacked then may be there now: walk the whole tree again.
        .filter(|_| !row.skipped.contains_key(OBJECT_NOT_PRESENT));
    let changes = match basis {
        Some(basis) => {
            let changes = repo.tree_changes(&first, sha)?;
            let touches_rules = changes.iter().any(|c| {
                let name = c.raw_path.rsplit(|&b| b == b'/').next().unwrap_or_default();
                name == IGNORE_FILE.as_bytes()
            });
            (!touches_rules).then_some((basis, changes))
        }
        None => None,
    };
    Ok(Some(Parent { row, changes }))
}

/// What reading a commit found.
pub(super) struct Walked {
    /// Files in the commit's tree.
    pub(super) files: u64,
    pub(super) listing: Listing,
    /// New file versions (those too large to chunk are skipped already).
    pub(super) new_files: Vec<NewFile>,
    /// Files skipped by the commit's decisions, by reason, as a change to the parent's
    /// counts for a listing of changes.
    pub(super) commit_skips: BTreeMap<String, i64>,
    /// Reused versions whose lexical entries are not committed.
    pub(super) unready: Vec<i64>,
    pub(super) basis: Basis,
}

pub(super) enum Listing {
    /// Every listed path.
    Whole(Vec<(String, Plan)>),
    /// The paths that differ from the parent's tree: the version the parent listed there,
    /// and the plan for the path now (`None`: not listed).
    Changes(Vec<(String, Option<i64>, Option<Plan>)>),
}

/// Reads every entry of the commit's tree.
pub(super) fn walk_whole(
    repo: &Repo,
    store: &Store,
    sha: &str,
    options: &IndexOptions,
    report: &mut Reporter<'_>,
) -> Result<Walked, IndexError> {
    let mut objects = ObjectReader::open(repo.source())?;
    let entries = objects.repo().tree_entries(sha)?;
    let (rules, ignore_files) = commit_rules(objects.repo(), &entries)?;
    // What the tree walk mapped is not needed again.
    objects.release()?;
    let mut ignored = rules.matcher();
    let mut walked = Walked {
        files: entries.len() as u64,
        listing: Listing::Whole(Vec::new()),
        new_files: Vec::new(),
        commit_skips: BTreeMap::new(),
        unready: Vec::new(),
        basis: Basis::new(ignore_files),
    };
    let mut listed = Vec::with_capacity(entries.len());
    report.start(IndexPhase::Reading, entries.len())?;
    // Deciding reads no content (chunking does): each entry counts as a file of no bytes.
    for entry in &entries {
        let plan = walked.read(&mut objects, store, entry, options, &mut ignored)?;
        listed.extend(plan.map(|plan| (entry.path.clone(), plan)));
        report.step(0)?;
    }
    walked.listing = Listing::Whole(listed);
    Ok(walked)
}

/// Reads only the entries that differ from the parent's tree.
pub(super) fn walk_changes(
    repo: &Repo,
    store: &Store,
    parent: &Parent,
    (basis, changes): &(Basis, Vec<TreeChange>),
    options: &IndexOptions,
    report: &mut Reporter<'_>,
) -> Result<Walked, IndexError> {
    let rules = basis.rules(repo)?;
    let mut ignored = rules.matcher();
    let mut objects = ObjectReader::open(repo.source())?;
    let mut walked = Walked {
        files: parent.row.files,
        listing: Listing::Whole(Vec::new()),
        new_files: Vec::new(),
        commit_skips: BTreeMap::new(),
        unready: Vec::new(),
        basis: basis.clone(),
    };
    let mut listed = Vec::with_capacity(changes.len());
    report.start(IndexPhase::Reading, changes.len())?;
    for change in changes {
        let mut removed = None;
        if let Some((kind, _)) = &change.old {
            walked.files = walked.files.saturating_sub(1);
            // What the parent decided for the path: a listed version, or a skip that only
            // the entry's kind, the (unchanged) rules or a missing blob explains.
            match store.manifest_entry(&parent.row.sha, &change.path)? {
                Some(id) => removed = Some(id),
                None => {
                    let reason = match kind {
                        EntryKind::Symlink => "symlink",
                        EntryKind::Submodule => "submodule",
                        EntryKind::File if ignored.is_ignored(&change.raw_path) => "ignored",
                        EntryKind::File => OBJECT_NOT_PRESENT,
                    };
                    *walked.commit_skips.entry(reason.to_owned()).or_default() -= 1;
                }
            }
        }
        let plan = match &change.new {
            Some((kind, id)) => {
                walked.files += 1;
                let entry = TreeEntry {
                    path: change.path.clone(),
                    raw_path: change.raw_path.clone(),
                    id: id.clone(),
                    kind: *kind,
                };
                walked.read(&mut objects, store, &entry, options, &mut ignored)?
            }
            None => None,
        };
        listed.push((change.path.clone(), removed, plan));
        report.step(0)?;
    }
    walked.listing = Listing::Changes(listed);
    Ok(walked)
}

impl Walked {
    /// Decides one entry of the commit: its plan when it is listed.
    fn read(
        &mut self,
        objects: &mut ObjectReader,
        store: &Store,
        entry: &TreeEntry,
        options: &IndexOptions,
        ignored: &mut crate::ignore::Matcher<'_>,
    ) -> Result<Option<Plan>, IndexError> {
        Ok(match read_entry(objects, store, entry, options, ignored)? {
            Read::Skip(reason) => {
                *self.commit_skips.entry(reason.to_owned()).or_default() += 1;
                None
            }
            Read::Reuse(version) => {
                if !version.ready {
                    self.unready.push(version.id);
                }
                Some(Plan::Reuse(version.id))
            }
            Read::New(file) => {
                self.new_files.push(file);
                Some(Plan::New(self.new_files.len() - 1))
            }
        })
    }
}

/// What reading one entry of the commit's tree decided.
pub(super) enum Read {
    /// Left out of the snapshot, for this reason.
    Skip(&'static str),
    /// A file version the store holds.
    Reuse(ctxpack_store::FileVersion),
    /// A new file version (skipped as `too_large` when it is too large to chunk).
    New(NewFile),
}

fn read_entry(
    objects: &mut ObjectReader,
    store: &Store,
    entry: &TreeEntry,
    options: &IndexOptions,
    ignored: &mut crate::ignore::Matcher<'_>,
) -> Result<Read, IndexError> {
    match entry.kind {
        EntryKind::Symlink => return Ok(Read::Skip("symlink")),
        EntryKind::Submodule => return Ok(Read::Skip("submodule")),
        EntryKind::File if ignored.is_ignored(&entry.raw_path) => return Ok(Read::Skip("ignored")),
        EntryKind::File => {}
    }
    if let Some(version) = store.file_version(&entry.path, &entry.id, STORED_CHUNKER)? {
        return Ok(Read::Reuse(version));
    }
    // A partial clone lacks some blobs by design, and a damaged pack loses some: the rest of
    // the commit is still worth indexing. The file is counted, so the summary says what is
    // missing (`git fsck` tells why).
    let Some(bytes) = objects.blob_size_if_present(&entry.id)? else {
        return Ok(Read::Skip(OBJECT_NOT_PRESENT));
    };
    let too_large = bytes > options.max_file_bytes;
    let file = NewFile {
        path: entry.path.clone(),
        blob: entry.id.clone(),
        bytes,
        skip_reason: too_large.then(|| "too_large".to_owned()),
        chunks: Vec::new(),
        imports: None,
    };
    Ok(Read::New(file))
}

/// The ignore rules of a commit: the defaults and every `.ctxpackignore` file in its tree;
/// and those files, as `(directory, blob id)`.
#[allow(clippy::type_complexity)]
fn commit_rules(
    repo: &Repo,
    entries: &[TreeEntry],
) -> Result<(IgnoreRules, Vec<(Vec<u8>, String)>), IndexError> {
    let mut files = Vec::new();
    let mut ids = Vec::new();
    for entry in entries {
        let (dir, name) = match entry.raw_path.iter().rposition(|&b| b == b'/') {
            Some(slash) => (&entry.raw_path[..slash], &entry.raw_path[slash + 1..]),
            None => (&entry.raw_path[..0], &entry.raw_path[..]),
        };
        // Like git, which does not follow a symbolic link to an ignore file in a tree.
        if entry.kind == EntryKind::File && name == IGNORE_FILE.as_bytes() {
            // The rules decide what the snapshot holds: a commit whose rules cannot be read
            // (even in a partial clone) is not indexed with a guess at them.
            files.push((dir, repo.read_blob(&entry.id)?));
            ids.push((dir.to_vec(), entry.id.clone()));
        }
    }
    let rules = IgnoreRules::new(
        files
            .iter()
            .map(|(dir, content)| (*dir, content.as_slice())),
    );
    Ok((rules, ids))
}
