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
    /// Change logs and release notes written as documents ([`is_change_log_document`]): the
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

/// The goal of a commit message: subject and body, without trailers (`Signed-off-by: …`),
/// links, issue references and co-author lines; whitespace collapsed.
pub fn clean_goal(message: &str) -> String {
    let lines: Vec<&str> = message.lines().collect();
    // Trailers: the last paragraph, when every line of it looks like `Token: value`.
    let mut end = lines.len();
    while end > 0 && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && !lines[start - 1].trim().is_empty() {
        start -= 1;
    }
    let is_trailer = |l: &str| {
        l.split_once(':').is_some_and(|(k, _)| {
            !k.is_empty()
                && !k.contains(' ')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    if start > 0 && lines[start..end].iter().all(|l| is_trailer(l)) {
        end = start;
    }
    let mut words = Vec::new();
    for line in &lines[..end] {
        for word in line.split_whitespace() {
            let bare = word.trim_matches(|c: char| "()[]<>,.;".contains(c));
            let is_link = bare.starts_with("http://") || bare.starts_with("https://");
            let is_ref = bare.starts_with('#')
                && bare.len() > 1
                && bare[1..].chars().all(|c| c.is_ascii_digit());
            let is_gh_ref = bare.contains('#')
                && bare
                    .split('#')
                    .next_back()
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                && bare.contains('/');
            if !is_link && !is_ref && !is_gh_ref {
                words.push(word);
            }
        }
    }
    words
        .join(" ")
        .trim()
        .trim_end_matches(['(', '['])
        .trim()
        .to_owned()
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

/// Quality of one pack against a gold set.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Score {
    /// Share of gold files cited.
    pub recall: f64,
    /// 1 if any gold file is cited.
    pub hit: f64,
    /// 1 / position of the first hit from a gold file (0 if none).
    pub reciprocal_rank: f64,
    /// Share of pack cost from gold files.
    pub token_precision: f64,
    /// Share of gold files with at least [`BODY_LINES`] of their lines (or all, when they
    /// have fewer) in the pack: cited with their text, not just named.
    pub body_recall: f64,
}

/// Scores a pack against the gold files; `lines_of` gives a gold file's number of lines.
pub fn score(pack: &PackedPaths, gold: &[String], lines_of: impl Fn(&str) -> u32) -> Score {
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
    Score {
        recall: share(found),
        body_recall: share(bodies),
        hit: f64::from(u8::from(found > 0)),
        reciprocal_rank: first.map_or(0.0, |i| 1.0 / (i + 1) as f64),
        token_precision: if total == 0 {
            0.0
        } else {
            gold_cost as f64 / total as f64
        },
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
        let s = score(&pack, &["b.rs".into(), "c.rs".into()], |_| 100);
        assert_eq!(s.recall, 0.5);
        assert_eq!(s.hit, 1.0);
        assert_eq!(s.reciprocal_rank, 0.5);
        assert_eq!(s.token_precision, 0.6);
        assert_eq!(s.body_recall, 0.5);
        // a.rs shows lines 1 to 9 (overlaps count once): nine lines of a long file are a
        // citation, not a body; of a nine-line file, the whole body.
        let gold = ["a.rs".to_owned()];
        assert_eq!(score(&pack, &gold, |_| 100).body_recall, 0.0);
        assert_eq!(score(&pack, &gold, |_| 9).body_recall, 1.0);
        assert_eq!(score(&pack, &gold, |_| 0).body_recall, 1.0);
        let s = score(&PackedPaths::default(), &["b.rs".into()], |_| 1);
        assert_eq!(
            (s.recall, s.hit, s.reciprocal_rank, s.token_precision),
            (0.0, 0.0, 0.0, 0.0)
        );
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
