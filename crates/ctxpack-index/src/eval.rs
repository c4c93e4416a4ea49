//! Evaluation on a repository's own history: tasks mined from commits, the reference rankers
//! ctxpack is compared with, and the pack-quality metrics.
//!
//! A task is a non-merge commit with a descriptive message that modifies one to three non-test
//! source files that exist in its parent. The goal is the message without trailers and links,
//! the snapshot is the parent, and the gold set is those files: a good pack for the goal, built
//! from the parent, cites them. Tasks about documentation are mined the same way from commits
//! that change prose documents and no source file ([`Gold::Prose`]), and from commits that
//! change a change log alone ([`Gold::ChangeLog`]), so a change of ranking that favours code
//! can be measured on what it costs documentation and release notes.

use std::collections::{BTreeMap, HashMap, HashSet};

use ctxpack_meter::Meter;
use serde::{Deserialize, Serialize};

use crate::error::IndexError;
use crate::git::{EntryKind, Repo};
pub use crate::history::clean_goal;
use crate::retrieve::is_test_path;

/// One evaluation task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The goal a user would have asked.
    pub goal: String,
    /// The snapshot to pack from (the commit's parent).
    pub at: String,
    /// Files the change touched: what a good pack cites.
    pub gold: Vec<String>,
    /// The commit the task was mined from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// Extensions of files that count as source code for task mining.
const SOURCE_EXTENSIONS: &[&str] = &[
    "rs", "py", "js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "go", "java", "kt", "c", "h", "cc",
    "cpp", "cxx", "hpp", "cs", "rb", "php", "swift", "scala", "vue", "svelte", "lua", "sh",
];

/// Extensions of prose documents.
const PROSE_EXTENSIONS: &[&str] = &["md", "markdown", "mdx", "rst", "adoc", "asciidoc"];

/// Names (lowercase, before the first `.`) of documents that log the project rather than
/// describe it: change logs, release notes and lists of people are updated routinely.
const PROSE_LOGS: &[&str] = &[
    "changelog",
    "changes",
    "history",
    "news",
    "releases",
    "release-notes",
    "release_notes",
    "releasenotes",
    "whatsnew",
    "authors",
    "contributors",
    "citation",
];

/// Directories (lowercase) that hold a change log as fragments, one file per change.
const LOG_DIRECTORIES: &[&str] = &[
    "changelog",
    "changelog.d",
    "newsfragments",
    ".changeset",
    "release-notes",
    "releasenotes",
    "whatsnew",
];

/// Which files a mined task's gold set is made of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Gold {
    /// Non-test source files: the commit modifies one to three existing ones, and adds or
    /// deletes none (documentation may change beside them).
    #[default]
    Code,
    /// Prose documents (Markdown, reStructuredText, AsciiDoc), change logs and release notes
    /// excepted: the commit modifies one to three existing ones, adds or deletes none, and
    /// changes no source file, no file under a test directory and no change log.
    Prose,
    /// Change logs and release notes written as documents (`is_change_log_document`): the
    /// commit modifies one to three existing ones, adds or deletes none, and changes no
    /// source file, no file under a test directory and no other document. Their goals are
    /// what a user asks when the answer is in the release notes.
    ChangeLog,
}

impl Gold {
    /// The name accepted by `eval history --gold`.
    pub fn name(self) -> &'static str {
        match self {
            Gold::Code => "code",
            Gold::Prose => "prose",
            Gold::ChangeLog => "changelog",
        }
    }

    /// The files a task of this kind changes, as an error names them.
    pub fn files(self) -> &'static str {
        match self {
            Gold::Code => "non-test source files",
            Gold::Prose => "prose documents and no source file, test or change log",
            Gold::ChangeLog => "change logs and no source file, test or other document",
        }
    }

    /// Whether a changed `path` can be gold.
    fn admits(self, path: &str) -> bool {
        match self {
            Gold::Code => is_source_path(path),
            Gold::Prose => {
                is_prose_path(path) && !is_test_path(path) && !is_change_log_document(path)
            }
            Gold::ChangeLog => is_change_log_document(path) && !is_test_path(path),
        }
    }

    /// Whether a change to `path`, which cannot be gold, disqualifies the commit.
    fn excludes(self, path: &str) -> bool {
        match self {
            Gold::Code => false,
            Gold::Prose => {
                is_test_path(path) || has_source_extension(path) || is_change_log_document(path)
            }
            Gold::ChangeLog => {
                is_test_path(path) || has_source_extension(path) || is_prose_path(path)
            }
        }
    }

    /// Whether a cleaned goal describes a task of this kind: [`is_descriptive`], except that
    /// a documentation task may say what it is (`docs: …`, `Update README to …`), and a
    /// change-log task too (`Update changelog for the 2.3 release`).
    fn describes(self, goal: &str) -> bool {
        match self {
            Gold::Code => is_descriptive(goal),
            Gold::Prose => is_descriptive_except(goal, &["docs", "update readme"]),
            Gold::ChangeLog => {
                is_descriptive_except(goal, &["docs", "changelog", "update changelog"])
            }
        }
    }
}

impl std::fmt::Display for Gold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Gold {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Gold::Code, Gold::Prose, Gold::ChangeLog]
            .into_iter()
            .find(|g| g.name() == s)
            .ok_or_else(|| format!("unknown gold kind `{s}`: expected code, prose or changelog"))
    }
}

/// Subjects that describe no task.
const UNDESCRIPTIVE: &[&str] = &[
    "typo",
    "fix typo",
    "bump",
    "release",
    "version",
    "merge",
    "revert",
    "wip",
    "cleanup",
    "clean up",
    "format",
    "fmt",
    "lint",
    "changelog",
    "update changelog",
    "update readme",
    "docs",
    "update deps",
    "update dependencies",
    "prepare release",
];

/// Whether a path is a non-test source file.
pub fn is_source_path(path: &str) -> bool {
    extension(path).is_some_and(|e| SOURCE_EXTENSIONS.contains(&e)) && !is_test_path(path)
}

/// Whether a path is a prose document, by its extension (in any case).
pub fn is_prose_path(path: &str) -> bool {
    extension(path).is_some_and(|e| PROSE_EXTENSIONS.iter().any(|p| e.eq_ignore_ascii_case(p)))
}

/// The extension of a path's file name, as written (`None` without a `.`).
fn extension(path: &str) -> Option<&str> {
    file_name(path).rsplit_once('.').map(|(_, e)| e)
}

/// The last component of a path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether a path has a source file's extension, in any case, tests included (unlike
/// [`is_source_path`], which code tasks match case-sensitively and without tests).
fn has_source_extension(path: &str) -> bool {
    extension(path).is_some_and(|e| SOURCE_EXTENSIONS.iter().any(|s| e.eq_ignore_ascii_case(s)))
}

/// Whether a path is a change log written as a document: [`is_log`], and a prose document
/// or a file without an extension (`CHANGES`, `NEWS`). `history.py` is code, not a log.
fn is_change_log_document(path: &str) -> bool {
    is_log(path) && (extension(path).is_none() || is_prose_path(path))
}

/// Whether a path is a change log, release notes or a list of people ([`PROSE_LOGS`]), or
/// lies in a directory of change-log fragments ([`LOG_DIRECTORIES`]).
fn is_log(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let name = file_name(&lower);
    let stem = name.split('.').next().unwrap_or(name);
    PROSE_LOGS.contains(&stem)
        || lower
            .rsplit('/')
            .skip(1)
            .any(|dir| LOG_DIRECTORIES.contains(&dir))
}

/// Whether a cleaned goal describes a task: at least three words, and not a routine subject.
pub fn is_descriptive(goal: &str) -> bool {
    is_descriptive_except(goal, &[])
}

/// [`is_descriptive`], with the routine subjects in `allowed` allowed.
fn is_descriptive_except(goal: &str, allowed: &[&str]) -> bool {
    let subject = goal.to_lowercase();
    let words = subject.split_whitespace().count();
    if words < 3 {
        return false;
    }
    let first = subject
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .split([':', '('])
        .next()
        .unwrap_or("");
    let trimmed = subject.trim_start_matches(|c: char| !c.is_alphanumeric());
    !UNDESCRIPTIVE.iter().any(|u| {
        !allowed.contains(u)
            && trimmed.starts_with(u)
            && trimmed[u.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric())
    }) && !matches!(
        first,
        "chore" | "release" | "build" | "ci" | "style" | "deps"
    )
}

/// Mines up to `count` tasks whose gold files are of kind `gold_kind` from the history of `head`,
/// newest first, scanning at most `scan` commits. Deterministic for a given repository state.
pub fn mine_tasks(
    repo: &Repo,
    head: &str,
    count: usize,
    scan: usize,
    gold_kind: Gold,
) -> Result<Vec<Task>, IndexError> {
    let mut tasks = Vec::new();
    for sha in repo.history(head, scan) {
        if tasks.len() >= count {
            break;
        }
        let info = repo.commit_info(&sha)?;
        if info.parents.len() != 1 {
            continue;
        }
        let goal = clean_goal(&info.message);
        if !gold_kind.describes(&goal) {
            continue;
        }
        let parent = &info.parents[0];
        let Ok(before) = repo.tree_entries(parent) else {
            continue;
        };
        let after = repo.tree_entries(&sha)?;
        let before: HashMap<&str, &str> = before
            .iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| (e.path.as_str(), e.id.as_str()))
            .collect();
        let mut gold = Vec::new();
        let mut changes = 0;
        let mut excluded = false;
        let after_paths: HashSet<&str> = after.iter().map(|e| e.path.as_str()).collect();
        for e in after.iter().filter(|e| e.kind == EntryKind::File) {
            let previous = before.get(e.path.as_str());
            if previous == Some(&e.id.as_str()) {
                continue;
            }
            if gold_kind.admits(&e.path) {
                if previous.is_some() {
                    gold.push(e.path.clone());
                }
                // A new file of the kind makes the task partly "create", not "find".
                changes += 1;
            } else {
                excluded |= gold_kind.excludes(&e.path);
            }
        }
        // Deleted files count as changes too.
        for path in before.keys().filter(|p| !after_paths.contains(*p)) {
            if gold_kind.admits(path) {
                changes += 1;
            } else {
                excluded |= gold_kind.excludes(path);
            }
        }
        if excluded || gold.is_empty() || gold.len() > 3 || changes != gold.len() {
            continue;
        }
        tasks.push(Task {
            goal,
            at: parent.clone(),
            gold,
            commit: Some(sha),
        });
    }
    Ok(tasks)
}

/// A packed file list: the paths of a pack's hits in pack order, with each hit's cost and
/// lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PackedPaths {
    /// The hits, in pack order.
    pub hits: Vec<PackedHit>,
}

/// One hit of a packed file list.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedHit {
    /// The file.
    pub path: String,
    /// Its cost in the pack's meter.
    pub cost: u64,
    /// The first and last line of the file the hit shows (1-based, inclusive).
    pub lines: (u32, u32),
}

impl PackedHit {
    /// A hit of `path` showing `lines`.
    pub fn new(path: impl Into<String>, cost: u64, lines: (u32, u32)) -> PackedHit {
        PackedHit {
            path: path.into(),
            cost,
            lines,
        }
    }
}

/// How many lines of a gold file a pack must show for its body to count: ten, or the whole
/// file when it is shorter.
pub const BODY_LINES: u32 = 10;

/// A change the task's commit makes to a gold file, placed in the file as the task's snapshot
/// has it: a pack shows it when a cited range of the file touches [`Hunk::lines`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// The gold file.
    pub path: String,
    /// The first and last line (1-based, inclusive) of the snapshot's file that the change
    /// replaces or deletes; for a pure insertion, the line it follows and the line after it
    /// (the first line alone for an insertion at the top).
    pub lines: (u32, u32),
}

impl Hunk {
    /// A change that replaces or deletes lines `first..=last` of `path`.
    pub fn replacing(path: impl Into<String>, first: u32, last: u32) -> Hunk {
        Hunk {
            path: path.into(),
            lines: (first, last),
        }
    }

    /// A pure insertion after line `line` of `path` (0: at the top).
    pub fn inserting_after(path: impl Into<String>, line: u32) -> Hunk {
        Hunk {
            path: path.into(),
            lines: (line.max(1), line + 1),
        }
    }

    /// Whether a hit shows part of the change: it is of the same file and its lines touch the
    /// hunk's.
    pub fn shown_by(&self, hit: &PackedHit) -> bool {
        hit.path == self.path && hit.lines.0 <= self.lines.1 && self.lines.0 <= hit.lines.1
    }
}

/// The hunks of the change of `path` from `old` to `new`: a line diff without context (Myers,
/// as `git diff -U0` draws them), each run of changed lines one hunk.
pub fn hunks(path: &str, old: &str, new: &str) -> Vec<Hunk> {
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .diff_lines(old, new);
    diff.grouped_ops(0)
        .iter()
        .filter_map(|group| {
            let (first, last) = (group.first()?, group.last()?);
            let (start, end) = (first.old_range().start, last.old_range().end);
            let line = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            Some(if start == end {
                Hunk::inserting_after(path, line(start))
            } else {
                Hunk::replacing(path, line(start + 1), line(end))
            })
        })
        .collect()
}

/// The hunks of a mined task: what its commit changes in its gold files, placed in the
/// snapshot's (the parent's) files. Empty when the task names no commit (tasks given as
/// JSON Lines may not) or its commit changes no gold file's text.
pub fn task_hunks(repo: &Repo, parent: &str, task: &Task) -> Result<Vec<Hunk>, IndexError> {
    let Some(commit) = &task.commit else {
        return Ok(Vec::new());
    };
    let commit = repo.resolve(commit)?;
    let mut out = Vec::new();
    for change in repo.tree_changes(parent, &commit)? {
        if !task.gold.contains(&change.path) {
            continue;
        }
        let (Some((EntryKind::File, old)), Some((EntryKind::File, new))) =
            (&change.old, &change.new)
        else {
            continue;
        };
        let text = |id: &str| -> Result<String, IndexError> {
            Ok(String::from_utf8_lossy(&repo.read_blob(id)?).into_owned())
        };
        out.extend(hunks(&change.path, &text(old)?, &text(new)?));
    }
    Ok(out)
}

/// Quality of one pack against a gold set.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Score {
    /// Share of gold files cited.
    pub recall: f64,
    /// 1 if any gold file is cited.
    pub hit: f64,
    /// 1 / position of the first hit from a gold file (0 if none).
    pub reciprocal_rank: f64,
    /// Share of the pack's hit cost that comes from gold files: a precision guard, since
    /// every other token costs the reader budget and attention.
    pub gold_share: f64,
    /// Share of gold files with at least [`BODY_LINES`] of their lines (or all, when they
    /// have fewer) in the pack: cited with their text, not just named.
    pub body_recall: f64,
    /// Share of the task's hunks ([`Hunk`]) that a cited range touches: the pack shows the
    /// place the change is made, not only its file. `None` when the task's hunks are unknown.
    pub edit_recall: Option<f64>,
    /// 1 if a cited range touches at least one of the task's hunks; `None` as for
    /// [`Score::edit_recall`].
    pub edit_hit: Option<f64>,
}

/// Scores a pack against the gold files and the task's hunks (empty when unknown);
/// `lines_of` gives a gold file's number of lines.
pub fn score(
    pack: &PackedPaths,
    gold: &[String],
    hunks: &[Hunk],
    lines_of: impl Fn(&str) -> u32,
) -> Score {
    let gold: HashSet<&str> = gold.iter().map(String::as_str).collect();
    let cited: HashSet<&str> = pack.hits.iter().map(|h| h.path.as_str()).collect();
    let found = gold.iter().filter(|g| cited.contains(*g)).count();
    let bodies = gold
        .iter()
        .filter(|g| {
            let shown: HashSet<u32> = pack
                .hits
                .iter()
                .filter(|h| h.path == **g)
                .flat_map(|h| h.lines.0..=h.lines.1)
                .collect();
            shown.len() as u32 >= lines_of(g).clamp(1, BODY_LINES)
        })
        .count();
    let first = pack
        .hits
        .iter()
        .position(|h| gold.contains(h.path.as_str()));
    let total: u64 = pack.hits.iter().map(|h| h.cost).sum();
    let gold_cost: u64 = pack
        .hits
        .iter()
        .filter(|h| gold.contains(h.path.as_str()))
        .map(|h| h.cost)
        .sum();
    let share = |n: usize| {
        if gold.is_empty() {
            0.0
        } else {
            n as f64 / gold.len() as f64
        }
    };
    let edits_shown = hunks
        .iter()
        .filter(|hunk| pack.hits.iter().any(|hit| hunk.shown_by(hit)))
        .count();
    let edits_known = !hunks.is_empty();
    Score {
        recall: share(found),
        body_recall: share(bodies),
        hit: f64::from(u8::from(found > 0)),
        reciprocal_rank: first.map_or(0.0, |i| 1.0 / (i + 1) as f64),
        gold_share: if total == 0 {
            0.0
        } else {
            gold_cost as f64 / total as f64
        },
        edit_recall: edits_known.then(|| edits_shown as f64 / hunks.len() as f64),
        edit_hit: edits_known.then(|| f64::from(u8::from(edits_shown > 0))),
    }
}

/// The text files of a snapshot (skipping what indexing skips), for the reference rankers.
pub fn snapshot_files(
    repo: &Repo,
    sha: &str,
    max_bytes: u64,
) -> Result<Vec<(String, String)>, IndexError> {
    let mut out = Vec::new();
    for e in repo.tree_entries(sha)? {
        if e.kind != EntryKind::File || repo.blob_size(&e.id)? > max_bytes {
            continue;
        }
        let bytes = repo.read_blob(&e.id)?;
        if bytes[..bytes.len().min(8192)].contains(&0) {
            continue;
        }
        if let Ok(text) = String::from_utf8(bytes) {
            out.push((e.path, text));
        }
    }
    Ok(out)
}

/// The `dump` reference: whole files in path order while the budget lasts (a file that does
/// not fit is skipped, so the reference spends the budget as fully as a dump can).
pub fn dump(files: &[(String, String)], budget: u64, meter: Meter) -> PackedPaths {
    let mut left = budget;
    let mut hits = Vec::new();
    for (path, text) in files {
        let cost = meter.count(text);
        if cost <= left {
            left -= cost;
            let lines = text.lines().count().max(1) as u32;
            hits.push(PackedHit::new(path, cost, (1, lines)));
        }
    }
    PackedPaths { hits }
}

/// The `bm25` reference: BM25 (k1 = 1.2, b = 0.75) over fixed 40-line windows with plain
/// lowercase word terms, best first, drop-and-continue under the budget.
pub fn bm25(files: &[(String, String)], goal: &str, budget: u64, meter: Meter) -> PackedPaths {
    let windows = Windows::scored(files, goal);
    let mut order: Vec<(f64, usize)> = windows.scores.clone();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    windows.pack(files, order.into_iter().map(|(_, i)| i), budget, meter)
}

/// The `bm25-path` reference: the `bm25` windows, each score multiplied by (1 + 0.5 × the
/// number of the goal's terms in the file's path), each file's best window first (best
/// first), then every other window (best first), drop-and-continue under the budget.
pub fn bm25_path(files: &[(String, String)], goal: &str, budget: u64, meter: Meter) -> PackedPaths {
    let windows = Windows::scored(files, goal);
    let boosts: Vec<f64> = files
        .iter()
        .map(|(path, _)| {
            let in_path: HashSet<String> = terms(path).into_iter().collect();
            let named = windows
                .query
                .iter()
                .filter(|q| in_path.contains(*q))
                .count();
            1.0 + 0.5 * named as f64
        })
        .collect();
    let mut boosted: Vec<(f64, usize)> = windows
        .scores
        .iter()
        .map(|&(score, i)| (score * boosts[windows.file[i]], i))
        .collect();
    boosted.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut seen = HashSet::new();
    let (firsts, rest): (Vec<_>, Vec<_>) = boosted
        .into_iter()
        .partition(|&(_, i)| seen.insert(windows.file[i]));
    let order = firsts.into_iter().chain(rest).map(|(_, i)| i);
    windows.pack(files, order, budget, meter)
}

/// Plain lowercase word terms.
fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The 40-line windows of a snapshot's files, scored by BM25 against a goal.
struct Windows {
    /// The goal's distinct terms.
    query: Vec<String>,
    /// Each window's file (an index into the files), first and last line, and text.
    file: Vec<usize>,
    lines: Vec<(u32, u32)>,
    body: Vec<String>,
    /// `(score, window)` for every window that matches the goal.
    scores: Vec<(f64, usize)>,
}

impl Windows {
    fn scored(files: &[(String, String)], goal: &str) -> Windows {
        const WINDOW: usize = 40;
        let query: Vec<String> = {
            let mut seen = HashSet::new();
            terms(goal)
                .into_iter()
                .filter(|t| seen.insert(t.clone()))
                .collect()
        };
        let (mut file, mut spans, mut body, mut tfs, mut lens) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (fi, (_, text)) in files.iter().enumerate() {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            for (wi, chunk) in lines.chunks(WINDOW).enumerate() {
                let first = (wi * WINDOW) as u32 + 1;
                spans.push((first, first + chunk.len() as u32 - 1));
                let text: String = chunk.concat();
                let mut tf: BTreeMap<String, u32> = BTreeMap::new();
                let mut len = 0;
                for t in terms(&text) {
                    len += 1;
                    if query.contains(&t) {
                        *tf.entry(t).or_default() += 1;
                    }
                }
                file.push(fi);
                body.push(text);
                tfs.push(tf);
                lens.push(len);
            }
        }
        let n = body.len().max(1) as f64;
        let avg = lens.iter().sum::<usize>() as f64 / n;
        let df: HashMap<&str, usize> = query
            .iter()
            .map(|q| {
                (
                    q.as_str(),
                    tfs.iter().filter(|tf| tf.contains_key(q)).count(),
                )
            })
            .collect();
        let scores = tfs
            .iter()
            .zip(&lens)
            .enumerate()
            .map(|(i, (tf, len))| {
                let s: f64 = tf
                    .iter()
                    .map(|(t, &f)| {
                        let d = df.get(t.as_str()).copied().unwrap_or(0) as f64;
                        let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
                        let f = f64::from(f);
                        idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * *len as f64 / avg.max(1.0)))
                    })
                    .sum();
                (s, i)
            })
            .filter(|(s, _)| *s > 0.0)
            .collect();
        Windows {
            query,
            file,
            lines: spans,
            body,
            scores,
        }
    }

    /// The windows in `order`, each kept while it fits the budget (drop-and-continue).
    fn pack(
        &self,
        files: &[(String, String)],
        order: impl Iterator<Item = usize>,
        budget: u64,
        meter: Meter,
    ) -> PackedPaths {
        let mut left = budget;
        let mut hits = Vec::new();
        for i in order {
            let cost = meter.count(&self.body[i]);
            if cost <= left {
                left -= cost;
                hits.push(PackedHit::new(&files[self.file[i]].0, cost, self.lines[i]));
            }
        }
        PackedPaths { hits }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(packed: &PackedPaths) -> Vec<&str> {
        packed.hits.iter().map(|h| h.path.as_str()).collect()
    }

    #[test]
    fn bm25_path_boosts_paths_that_name_the_goal() {
        let text = "fn check() { budget budget }\n";
        let files = vec![
            ("src/alpha.rs".to_owned(), text.to_owned()),
            ("src/budget/enforce.rs".to_owned(), text.to_owned()),
            ("src/omega.rs".to_owned(), "nothing here\n".to_owned()),
        ];
        let goal = "Enforce the budget";
        // Equal text scores: plain BM25 keeps window order; the path boost (two goal terms
        // in `src/budget/enforce.rs`: × 2) puts the file that names them first.
        assert_eq!(
            paths(&bm25(&files, goal, 10_000, Meter::Approx)),
            ["src/alpha.rs", "src/budget/enforce.rs"]
        );
        assert_eq!(
            paths(&bm25_path(&files, goal, 10_000, Meter::Approx)),
            ["src/budget/enforce.rs", "src/alpha.rs"]
        );
    }

    #[test]
    fn bm25_path_takes_one_window_per_file_first() {
        // `a.rs` has two strong 40-line windows; `b.rs` one weaker window.
        let strong = "budget budget budget\n".repeat(40);
        let files = vec![
            ("a.rs".to_owned(), format!("{strong}{strong}")),
            (
                "b.rs".to_owned(),
                format!("budget\n{}", "other words\n".repeat(39)),
            ),
        ];
        assert_eq!(
            paths(&bm25(&files, "budget", 100_000, Meter::Approx)),
            ["a.rs", "a.rs", "b.rs"]
        );
        assert_eq!(
            paths(&bm25_path(&files, "budget", 100_000, Meter::Approx)),
            ["a.rs", "b.rs", "a.rs"]
        );
        // Drop-and-continue: a budget for one strong window and the weak one keeps both files.
        let one = Meter::Approx.count(&strong);
        let weak = Meter::Approx.count(&files[1].1);
        assert_eq!(
            paths(&bm25_path(&files, "budget", one + weak, Meter::Approx)),
            ["a.rs", "b.rs"]
        );
    }

    #[test]
    fn goals_are_cleaned() {
        let cases: &[(&str, &str)] = &[
            (
                "Add retry to the HTTP client (#123)\n\nSee https://example.com/x for details.\n\nSigned-off-by: A <a@b>\nCo-authored-by: B <b@c>\n",
                "Add retry to the HTTP client See for details.",
            ),
            (
                "fix: handle empty budgets\n\nFixes #42",
                "fix: handle empty budgets Fixes",
            ),
            ("Plain subject only", "Plain subject only"),
            (
                "Refactor parser\n\nReviewed-by: someone else entirely",
                "Refactor parser",
            ),
        ];
        for (message, goal) in cases {
            assert_eq!(clean_goal(message), *goal, "{message:?}");
        }
    }

    #[test]
    fn descriptive_goals() {
        let cases: &[(&str, bool)] = &[
            ("Add retry to the HTTP client", true),
            ("fix typo in README", false),
            ("Bump serde to 1.0.200", false),
            ("Release 1.2.3 now", false),
            ("chore: update dependencies everywhere", false),
            ("typo", false),
            ("Fix panic on empty input", true),
            ("formatting of numbers in tables", true),
            ("Merge branch 'main' of x", false),
        ];
        for (goal, expected) in cases {
            assert_eq!(is_descriptive(goal), *expected, "{goal}");
        }
    }

    #[test]
    fn prose_goals_may_say_what_they_are() {
        assert!(!Gold::Code.describes("docs: explain the budget rules"));
        assert!(Gold::Prose.describes("docs: explain the budget rules"));
        assert!(!Gold::Code.describes("Update README to explain the budget rules"));
        assert!(Gold::Prose.describes("Update README to explain the budget rules"));
        assert!(!Gold::Prose.describes("fix typo in the guide"));
        assert!(!Gold::Prose.describes("chore: regenerate the manual"));
    }

    #[test]
    fn prose_paths() {
        for gold in [
            "docs/guide/cli.md",
            "README.MD",
            "doc/source/usage.rst",
            "docs/newsletter.md",
            "docs/history-of-tokens.md",
            "docs/release-process.md",
        ] {
            assert!(Gold::Prose.admits(gold), "{gold}");
        }
        for not_gold in [
            "CHANGELOG.md",
            "HISTORY.rst",
            "doc/release-notes.rst",
            "changelog.d/1234.fixed.md",
            ".changeset/brave-owls.md",
            "tests/fixtures/sample.md",
            "requirements.txt",
            "src/lib.rs",
        ] {
            assert!(!Gold::Prose.admits(not_gold), "{not_gold}");
        }
        // A change beside the gold that disqualifies a documentation task, and one that does
        // not.
        for excluded in [
            "src/lib.rs",
            "src/Main.C",
            "tests/cli.rs",
            "tests/fixtures/expected.json",
            "docs/CHANGES.rst",
            "NEWS",
            "newsfragments/12.feature.md",
        ] {
            assert!(Gold::Prose.excludes(excluded), "{excluded}");
        }
        for allowed in [
            "mkdocs.yml",
            ".github/workflows/release.yml",
            "history.json",
        ] {
            assert!(!Gold::Prose.excludes(allowed), "{allowed}");
        }
        assert!(!Gold::Code.excludes("README.md"));
        assert_eq!("prose".parse(), Ok(Gold::Prose));
        assert_eq!(Gold::Prose.to_string(), "prose");
        assert!("docs".parse::<Gold>().is_err());
    }

    #[test]
    fn change_log_tasks() {
        assert!(Gold::ChangeLog.describes("Update changelog for the 2.3 release"));
        assert!(!Gold::Prose.describes("Update changelog for the 2.3 release"));
        assert!(!Gold::ChangeLog.describes("chore: update changelog for 2.3"));
        for gold in [
            "CHANGELOG.md",
            "HISTORY.rst",
            "CHANGES",
            "doc/release-notes.rst",
            "changelog.d/1234.fixed.md",
            ".changeset/brave-owls.md",
        ] {
            assert!(Gold::ChangeLog.admits(gold), "{gold}");
        }
        for not_gold in [
            "src/history.py",
            "mypy/history.rs",
            ".github/workflows/changelog.yml",
            "docs/newsletter.md",
            "README.md",
            "tests/data/CHANGELOG.md",
        ] {
            assert!(!Gold::ChangeLog.admits(not_gold), "{not_gold}");
        }
        for excluded in ["src/lib.rs", "tests/cli.rs", "README.md", "docs/guide.rst"] {
            assert!(Gold::ChangeLog.excludes(excluded), "{excluded}");
        }
        for allowed in [
            "Cargo.toml",
            "package.json",
            ".github/workflows/release.yml",
        ] {
            assert!(!Gold::ChangeLog.excludes(allowed), "{allowed}");
        }
        assert_eq!("changelog".parse(), Ok(Gold::ChangeLog));
        assert_eq!(Gold::ChangeLog.to_string(), "changelog");
    }

    #[test]
    fn source_paths() {
        assert!(is_source_path("src/client.rs"));
        assert!(!is_source_path("tests/client.rs"));
        assert!(!is_source_path("README.md"));
        assert!(!is_source_path("pkg/client_test.go"));
    }

    #[test]
    fn metrics() {
        let pack = PackedPaths {
            hits: vec![
                PackedHit::new("a.rs", 10, (1, 4)),
                PackedHit::new("b.rs", 30, (1, 40)),
                PackedHit::new("a.rs", 10, (3, 9)),
            ],
        };
        let s = score(&pack, &["b.rs".into(), "c.rs".into()], &[], |_| 100);
        assert_eq!(s.recall, 0.5);
        assert_eq!(s.hit, 1.0);
        assert_eq!(s.reciprocal_rank, 0.5);
        assert_eq!(s.gold_share, 0.6);
        assert_eq!((s.edit_recall, s.edit_hit), (None, None), "no hunks known");
        assert_eq!(s.body_recall, 0.5);
        // a.rs shows lines 1 to 9 (overlaps count once): nine lines of a long file are a
        // citation, not a body; of a nine-line file, the whole body.
        let gold = ["a.rs".to_owned()];
        assert_eq!(score(&pack, &gold, &[], |_| 100).body_recall, 0.0);
        assert_eq!(score(&pack, &gold, &[], |_| 9).body_recall, 1.0);
        assert_eq!(score(&pack, &gold, &[], |_| 0).body_recall, 1.0);
        let s = score(&PackedPaths::default(), &["b.rs".into()], &[], |_| 1);
        assert_eq!(
            (s.recall, s.hit, s.reciprocal_rank, s.gold_share),
            (0.0, 0.0, 0.0, 0.0)
        );
    }

    /// The edit measures of a pack whose hits are `ranges` of `a.rs`, against `hunks`.
    fn edits(ranges: &[(u32, u32)], hunks: &[Hunk]) -> (Option<f64>, Option<f64>) {
        let pack = PackedPaths {
            hits: ranges
                .iter()
                .map(|&r| PackedHit::new("a.rs", 10, r))
                .collect(),
        };
        let s = score(&pack, &["a.rs".into()], hunks, |_| 100);
        (s.edit_recall, s.edit_hit)
    }

    #[test]
    fn a_hunk_counts_when_a_cited_range_touches_it() {
        let hunk = [Hunk::replacing("a.rs", 20, 24)];
        // Inside, overlapping either end, or holding it: shown.
        for range in [(21, 22), (10, 20), (24, 30), (1, 100), (20, 24)] {
            assert_eq!(edits(&[range], &hunk), (Some(1.0), Some(1.0)), "{range:?}");
        }
        // Beside it, one line away on either side: not shown.
        for range in [(10, 19), (25, 40)] {
            assert_eq!(edits(&[range], &hunk), (Some(0.0), Some(0.0)), "{range:?}");
        }
        // Another file's range over the same lines shows nothing of it.
        let other = PackedPaths {
            hits: vec![PackedHit::new("b.rs", 10, (1, 100))],
        };
        let s = score(&other, &["a.rs".into()], &hunk, |_| 100);
        assert_eq!((s.edit_recall, s.edit_hit), (Some(0.0), Some(0.0)));
    }

    #[test]
    fn an_insertion_counts_by_the_line_it_follows_or_the_next() {
        let after_nine = [Hunk::inserting_after("a.rs", 9)];
        assert_eq!(after_nine[0].lines, (9, 10));
        for range in [(1, 9), (10, 12), (9, 9)] {
            assert_eq!(
                edits(&[range], &after_nine),
                (Some(1.0), Some(1.0)),
                "{range:?}"
            );
        }
        for range in [(1, 8), (11, 20)] {
            assert_eq!(
                edits(&[range], &after_nine),
                (Some(0.0), Some(0.0)),
                "{range:?}"
            );
        }
        // At the top of the file, the line after is the first.
        assert_eq!(Hunk::inserting_after("a.rs", 0).lines, (1, 1));
    }

    #[test]
    fn edit_recall_is_the_share_of_hunks_shown() {
        let hunks = [
            Hunk::replacing("a.rs", 5, 5),
            Hunk::replacing("a.rs", 50, 52),
            Hunk::inserting_after("a.rs", 80),
            Hunk::replacing("b.rs", 1, 3),
        ];
        assert_eq!(edits(&[(1, 10)], &hunks), (Some(0.25), Some(1.0)));
        assert_eq!(edits(&[(1, 10), (81, 90)], &hunks), (Some(0.5), Some(1.0)));
        assert_eq!(edits(&[(53, 79)], &hunks), (Some(0.0), Some(0.0)));
        assert_eq!(edits(&[], &hunks), (Some(0.0), Some(0.0)));
    }

    /// A mined task's hunks are its commit's changes to its gold files, placed in the parent's
    /// file where `git diff -U0` places them; a change to another file is not one of them.
    #[test]
    fn a_mined_task_has_its_commits_hunks_in_gold_files() {
        let old: String = (1..=60).map(|n| format!("    let v{n} = {n};\n")).collect();
        let new = old
            .replace("    let v12 = 12;\n", "    let v12 = 1200;\n")
            .replace(
                "    let v40 = 40;\n",
                "    let v40 = 40;\n    let extra = 0;\n",
            )
            .replace("    let v55 = 55;\n    let v56 = 56;\n", "");
        let fixture = ctxpack_testkit::Script::new()
            .write("src/values.rs", &old)
            .write("src/other.rs", "pub fn other() {}\n")
            .commit("Initial import of the values")
            .write("src/values.rs", &new)
            .write("README.md", "# values\n")
            .commit("Scale the twelfth value and add an extra one")
            .build();
        let repo = Repo::discover(fixture.path()).expect("a repository");
        let head = fixture.head();
        let tasks = mine_tasks(&repo, head, 5, 10, Gold::Code).expect("mined");
        assert_eq!(tasks.len(), 1, "{tasks:?}");
        let task = &tasks[0];
        assert_eq!(task.gold, ["src/values.rs"]);
        let found = task_hunks(&repo, &task.at, task).expect("hunks");
        assert_eq!(
            found,
            [
                Hunk::replacing("src/values.rs", 12, 12),
                Hunk::inserting_after("src/values.rs", 40),
                Hunk::replacing("src/values.rs", 55, 56),
            ]
        );
        // Where git itself draws them.
        let diff = ctxpack_testkit::git::git(
            fixture.path(),
            &[
                "diff",
                "-U0",
                "--no-color",
                "--diff-algorithm=myers",
                &task.at,
                head,
                "--",
                "src/values.rs",
            ],
        );
        let from_git: Vec<&str> = diff
            .lines()
            .filter(|l| l.starts_with("@@ "))
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        assert_eq!(from_git, ["-12", "-40,0", "-55,2"]);
        // A task without its commit has no hunks: the edit measures are unknown, not zero.
        let bare = Task {
            commit: None,
            ..task.clone()
        };
        assert!(
            task_hunks(&repo, &task.at, &bare)
                .expect("no hunks")
                .is_empty()
        );
        let pack = PackedPaths {
            hits: vec![PackedHit::new("src/values.rs", 10, (1, 60))],
        };
        let s = score(&pack, &bare.gold, &[], |_| 60);
        assert_eq!((s.edit_recall, s.edit_hit), (None, None));
        let s = score(&pack, &task.gold, &found, |_| 60);
        assert_eq!((s.edit_recall, s.edit_hit), (Some(1.0), Some(1.0)));
        // The scorer can fail: a range that stops a line short of each hunk shows none.
        let short = PackedPaths {
            hits: vec![
                PackedHit::new("src/values.rs", 10, (1, 11)),
                PackedHit::new("src/values.rs", 10, (13, 39)),
                PackedHit::new("src/values.rs", 10, (42, 54)),
            ],
        };
        let s = score(&short, &task.gold, &found, |_| 60);
        assert_eq!((s.edit_recall, s.edit_hit), (Some(0.0), Some(0.0)));
    }

    #[test]
    fn hunks_are_runs_of_changed_lines_in_the_old_file() {
        let old: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        let new = old
            .replace("line 3\n", "line three\n")
            .replace("line 10\nline 11\n", "")
            .replace("line 20\n", "line 20\nnew a\nnew b\n")
            .replace("line 25\n", "line 25a\nline 25b\n");
        let new = format!("top\n{new}");
        assert_eq!(
            hunks("a.rs", &old, &new),
            [
                Hunk::inserting_after("a.rs", 0),
                Hunk::replacing("a.rs", 3, 3),
                Hunk::replacing("a.rs", 10, 11),
                Hunk::inserting_after("a.rs", 20),
                Hunk::replacing("a.rs", 25, 25),
            ]
        );
        // An append at the end follows the last line.
        assert_eq!(
            hunks("a.rs", "a\nb\n", "a\nb\nc\n"),
            [Hunk::inserting_after("a.rs", 2)]
        );
        assert!(hunks("a.rs", &old, &old).is_empty());
    }

    #[test]
    fn reference_rankers() {
        let files = vec![
            ("a.rs".to_owned(), "fn alpha() {}\n".repeat(50)),
            ("b.rs".to_owned(), "fn retry_http() { retry }\n".to_owned()),
        ];
        let d = dump(&files, 1000, Meter::Words);
        assert_eq!(d.hits.len(), 2);
        let d = dump(&files, 10, Meter::Words);
        assert_eq!(
            d.hits.len(),
            1,
            "dump skips a file that does not fit and goes on"
        );
        assert_eq!(d.hits[0].path, "b.rs");
        assert_eq!(d.hits[0].lines, (1, 1));
        let b = bm25(&files, "retry the http", 1000, Meter::Approx);
        assert_eq!(b.hits[0].path, "b.rs");
        assert_eq!(
            b.hits.len(),
            1,
            "windows without query terms are not packed"
        );
    }
}
