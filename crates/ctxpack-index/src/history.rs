//! History as evidence: a repository's own commit messages describe the files they touched.
//!
//! [`History::load`] reads the most recent commits of a snapshot's past — the snapshot's
//! commit and its ancestors by reachability, never anything after it — with the paths each
//! one changed against its first parent. At pack time [`History::file_scores`] scores every
//! past message against the goal (BM25 over messages) and gives each file the evidence of the
//! messages that touched it, so a goal that resembles how the project has described changes
//! before pulls up the files those changes were made in. [`History::companions`] turns the
//! same commits into co-change evidence: the files that changed together with a given file.
//!
//! Everything read from the repository is bounded: at most [`HISTORY_COMMITS`] commits,
//! [`MAX_MESSAGE_BYTES`] of each message, and no paths from a commit that touched more than
//! [`MAX_PATHS_PER_COMMIT`] files (a mass rename or reformat describes none of them). A
//! shallow clone or a missing object ends the walk with what was read.

use std::collections::HashMap;

use ctxpack_store::{QueryTerms, analyze};

use crate::git::Repo;

/// How many commits of a snapshot's past are read (its own commit included).
pub const HISTORY_COMMITS: usize = 300;
/// How much of a commit message is read.
pub const MAX_MESSAGE_BYTES: usize = 4096;
/// Commits that touched more files than this lend their message to none of them.
pub const MAX_PATHS_PER_COMMIT: usize = 50;

/// Decoded trees kept while walking: consecutive commits share most of them.
const OBJECT_CACHE_BYTES: usize = 32 << 20;

/// BM25 parameters for messages (short documents: length matters little).
const K1: f32 = 1.2;
const B: f32 = 0.3;

/// One past commit: the terms of its message and the paths it changed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PastCommit {
    /// Analyzed terms of the cleaned message (subject and body, no trailers).
    pub terms: Vec<String>,
    /// Paths the commit changed against its first parent, sorted.
    pub paths: Vec<String>,
}

/// The recent past of one snapshot.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct History {
    commits: Vec<PastCommit>,
}

impl History {
    /// The snapshot `sha`'s commit and its most recent ancestors, at most `limit` in all,
    /// nearest first. Merge commits and the root commit lend no paths (their changes are the
    /// branches' own commits, or everything). Never fails: what cannot be read is left out.
    pub fn load(repo: &Repo, sha: &str, limit: usize) -> History {
        let repo = repo.with_object_cache(OBJECT_CACHE_BYTES);
        let mut commits = Vec::new();
        for commit in repo.history(sha, limit) {
            let Ok(info) = repo.commit_info(&commit) else {
                break;
            };
            let [parent] = info.parents.as_slice() else {
                continue;
            };
            let Ok(changes) = repo.tree_changes(parent, &commit) else {
                continue;
            };
            if changes.is_empty() || changes.len() > MAX_PATHS_PER_COMMIT {
                continue;
            }
            let mut message = info.message;
            if message.len() > MAX_MESSAGE_BYTES {
                let mut end = MAX_MESSAGE_BYTES;
                while !message.is_char_boundary(end) {
                    end -= 1;
                }
                message.truncate(end);
            }
            let terms = analyze(&clean_goal(&message));
            if terms.is_empty() {
                continue;
            }
            commits.push(PastCommit {
                terms,
                paths: changes.into_iter().map(|c| c.path).collect(),
            });
        }
        History { commits }
    }

    /// The history stored for a snapshot when it was indexed ([`History::to_stored`]);
    /// `None` when there is none or it cannot be read (the past is then read from git).
    pub fn stored(store: &ctxpack_store::Store, sha: &str) -> Option<History> {
        let data = store.history(sha).ok()??;
        serde_json::from_str(&data).ok()
    }

    /// The history as a store keeps it.
    pub fn to_stored(&self) -> String {
        serde_json::to_string(self).expect("a history serializes")
    }

    /// A history of the given commits, nearest first.
    pub fn from_commits(commits: Vec<PastCommit>) -> History {
        History { commits }
    }

    /// Each touched file's evidence for the goal, from 0 to 1: the BM25 score of the best
    /// message that touched it, divided by the square root of the number of files its commit
    /// touched (a message says less about each of many files) and by what a message holding
    /// every goal term once would score (so a goal that resembles no past message lends
    /// little, however it compares with the others), at most 1. Files no matching message
    /// touched are absent.
    pub fn file_scores(&self, terms: &QueryTerms) -> HashMap<&str, f32> {
        let n = self.commits.len();
        if n == 0 || terms.0.is_empty() {
            return HashMap::new();
        }
        let mut df: HashMap<&str, usize> = terms.0.iter().map(|t| (t.as_str(), 0)).collect();
        let mut total_len = 0usize;
        for c in &self.commits {
            total_len += c.terms.len();
            for t in terms.0.iter() {
                if c.terms.iter().any(|x| x == t) {
                    *df.entry(t.as_str()).or_default() += 1;
                }
            }
        }
        let avg_len = total_len as f32 / n as f32;
        let idf = |t: &str| {
            let df = df.get(t).copied().unwrap_or(0) as f32;
            ((n as f32 - df + 0.5) / (df + 0.5) + 1.0).ln()
        };
        let perfect: f32 = terms.0.iter().map(|t| idf(t)).sum();
        if perfect <= 0.0 {
            return HashMap::new();
        }
        let mut per_file: HashMap<&str, f32> = HashMap::new();
        for c in &self.commits {
            let len = c.terms.len() as f32;
            let mut score = 0.0;
            for t in &terms.0 {
                let tf = c.terms.iter().filter(|x| *x == t).count() as f32;
                if tf > 0.0 {
                    score += idf(t) * tf * (K1 + 1.0)
                        / (tf + K1 * (1.0 - B + B * len / avg_len.max(1.0)));
                }
            }
            if score <= 0.0 {
                continue;
            }
            let share = score / perfect / (c.paths.len() as f32).sqrt();
            for p in &c.paths {
                let best = per_file.entry(p.as_str()).or_default();
                *best = best.max(share.min(1.0));
            }
        }
        per_file
    }

    /// Files that changed together with `path`, each with the share of `path`'s commits
    /// that also changed it, counting one commit more than `path` had (so one commit in
    /// common gives at most a half). `path` itself is absent.
    pub fn companions(&self, path: &str) -> HashMap<&str, f32> {
        let mut together: HashMap<&str, usize> = HashMap::new();
        let mut own = 0usize;
        for c in &self.commits {
            if c.paths.iter().any(|p| p == path) {
                own += 1;
                for p in &c.paths {
                    if p != path {
                        *together.entry(p.as_str()).or_default() += 1;
                    }
                }
            }
        }
        together
            .into_iter()
            .map(|(p, n)| (p, n as f32 / (own + 1) as f32))
            .collect()
    }
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

#[cfg(test)]
mod tests {
    use ctxpack_store::QueryTerms;

    use super::{History, PastCommit};

    fn commit(message: &str, paths: &[&str]) -> PastCommit {
        PastCommit {
            terms: ctxpack_store::analyze(message),
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    #[test]
    fn a_message_lends_its_score_to_each_file_it_touched_shared_by_their_number() {
        let history = History::from_commits(vec![
            commit("fix the parser crash", &["src/parser.rs"]),
            commit("fix the parser crash", &["a.rs", "b.rs", "c.rs", "d.rs"]),
            commit("render widgets", &["src/widget.rs"]),
            commit("render tables", &["src/table.rs"]),
        ]);
        let scores = history.file_scores(&QueryTerms::from_goal("parser crash"));
        let alone = scores["src/parser.rs"];
        assert!(alone > 0.0 && alone <= 1.0, "{scores:?}");
        // The same message over four files: half as much each.
        assert!((scores["a.rs"] - alone / 2.0).abs() < 1e-6, "{scores:?}");
        assert!(!scores.contains_key("src/widget.rs"), "{scores:?}");
        // A goal no message resembles lends nothing.
        assert!(
            history
                .file_scores(&QueryTerms::from_goal("quokka"))
                .is_empty()
        );
    }

    #[test]
    fn companions_are_shares_of_the_files_commits_plus_one() {
        let history = History::from_commits(vec![
            commit("one", &["ledger.rs", "index.rs"]),
            commit("two", &["ledger.rs", "index.rs", "other.rs"]),
            commit("three", &["ledger.rs"]),
        ]);
        let companions = history.companions("ledger.rs");
        assert_eq!(companions["index.rs"], 0.5);
        assert_eq!(companions["other.rs"], 0.25);
        assert!(!companions.contains_key("ledger.rs"));
        assert!(history.companions("absent.rs").is_empty());
    }
}
