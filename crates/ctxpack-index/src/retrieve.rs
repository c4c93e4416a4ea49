//! Retrieval: a goal in, ranked candidates of one snapshot out.
//!
//! Ranking has two stages. BM25 over chunk text, path and symbol (in the store) proposes a
//! wide pool of chunks; then each chunk's score is blended with the evidence of its whole file
//! (the best few chunk scores of that file in the pool), because a file whose many chunks
//! match moderately is usually more about the goal than one chunk that matches a rare word.
//! Tests, fixtures and snapshots are down-weighted: they restate what the code does rather
//! than do it. When the snapshot's past is given (see [`History`]), two more signals join the
//! blend: how closely a past commit message that touched the file resembles the goal, and how
//! often the file changed together with the best files of the pool. Last, a file that one of
//! the pool's best files imports gains a little of that file's evidence.

use std::collections::{BTreeMap, HashMap, HashSet};

use ctxpack_core::{Candidate, Citation, Family, Location, Tier};
use ctxpack_meter::{LineCounts, Meter};
use ctxpack_store::artifacts::ArtifactRow;
use ctxpack_store::{
    ChunkHead, ChunkRow, ExtraDoc, FileSet, LexicalHit, NewChunk, QueryTerms, ScoreBreakdown, Store,
};

use crate::chunk::graph;
use crate::error::IndexError;
use crate::history::History;
use crate::paths::PathFilter;

/// The fewest chunk heads a later read of a pool's heads asks for.
const HEADS_READ_AT_LEAST: usize = 64;
/// How many lexical hits are pooled per requested candidate (at least [`MIN_POOL`]).
const POOL_FACTOR: usize = 8;
const MIN_POOL: usize = 200;
/// How many of a file's best chunks count towards its file score.
const FILE_TOP_CHUNKS: usize = 5;
/// How many of the pool's best files lend co-change and graph evidence to their neighbours.
const LEADERS: usize = 3;

/// The tunable parts of ranking. `Default` is the measured best (see `docs/quality.md`); the
/// other values exist so the evaluation can show what each part is worth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetrieveOptions {
    /// Weight of the file's evidence against the chunk's own score (both normalised to the
    /// best in the pool); 0 ranks chunks by BM25 alone.
    pub file_weight: f32,
    /// Multiplier for chunks of test and fixture files; 1 treats them like source.
    pub test_prior: f32,
    /// Weight of the evidence of past commit messages that touched the chunk's file (see
    /// [`History::file_scores`]); 0 ignores history.
    pub history_weight: f32,
    /// Weight of co-change: how often a file changed together with one of the best files
    /// of the pool (weighted by that file's evidence); 0 ignores it.
    pub cochange_weight: f32,
    /// Weight of import edges: whether one of the pool's best files imports the chunk's file
    /// (weighted by that file's evidence, split among the files one import reaches); 0
    /// ignores them.
    pub import_weight: f32,
}

impl Default for RetrieveOptions {
    fn default() -> Self {
        RetrieveOptions {
            file_weight: 0.3,
            test_prior: 0.5,
            history_weight: 0.9,
            cochange_weight: 0.15,
            import_weight: 0.1,
        }
    }
}

/// A retrieved chunk: the candidate offered to selection and how its score came about.
#[derive(Clone, Debug, PartialEq)]
pub struct Retrieved {
    /// The candidate (citation, family, masked text, cost in the requested meter, score).
    pub candidate: Candidate,
    /// Final ranking score.
    pub score: f32,
    /// How the score came about.
    pub breakdown: Breakdown,
    /// Secrets masked in the text, by kind.
    pub redactions: BTreeMap<String, u64>,
    /// Whether the text was masked by today's rules when it was stored, so that masking it
    /// again would change nothing (masking is idempotent). Text stored by older rules, and
    /// working-tree text, is not.
    pub masked_by_current_rules: bool,
    /// Its text's `o200k` tokens before each of its lines, when stored with text masked by
    /// today's rules (so the text is the one counted).
    pub o200k_lines: Option<LineCounts>,
    /// The artifact the chunk belongs to, if it is one.
    pub artifact: Option<String>,
}

/// The components of a retrieval score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Breakdown {
    /// Per-field BM25 contributions of the chunk itself.
    pub bm25: ScoreBreakdown,
    /// The chunk's BM25 score (sum of the fields).
    pub chunk: f32,
    /// The file's evidence: the sum of its best chunk scores in the pool.
    pub file: f32,
    /// The path prior applied (1 for source files, lower for tests and fixtures).
    pub prior: f32,
    /// The file's evidence from past commit messages (0 to 1).
    pub history: f32,
    /// How much the file changed together with the pool's best files (0 to 1).
    pub cochange: f32,
    /// Whether one of the pool's best files imports the file, by that file's evidence (0 to 1).
    pub imported: f32,
}

/// The evidence one file contributes through its pooled chunks.
#[derive(Default)]
struct FileEvidence {
    chunks: usize,
    text: f32,
    path: f32,
    symbol: f32,
}

impl FileEvidence {
    /// Chunks arrive best first, so the first [`FILE_TOP_CHUNKS`] are the best.
    fn add(&mut self, b: ScoreBreakdown) {
        if self.chunks < FILE_TOP_CHUNKS {
            self.text += b.text;
        }
        self.chunks += 1;
        self.path = self.path.max(b.path);
        self.symbol = self.symbol.max(b.symbol);
    }

    fn score(&self) -> f32 {
        self.text + self.path + self.symbol
    }
}

/// Whether a chunk of a source file is test code: a `tests` module, or text with the test
/// markers of common languages (`#[test]`, `#[cfg(test)]`, `def test_`, `func Test`, `@Test`:
/// [`ctxpack_store::TEST_MARKERS`]).
pub fn is_test_chunk(head: &ChunkHead) -> bool {
    head.symbol
        .as_deref()
        .is_some_and(|s| s == "tests" || s.starts_with("tests::"))
        || head.test_marker
}

/// Whether a path is a test, fixture or snapshot rather than code under test (ASCII case
/// ignored). Asked of every file a large pool reaches, so it allocates nothing.
pub fn is_test_path(path: &str) -> bool {
    const DIRECTORIES: [&str; 9] = [
        "test",
        "tests",
        "testing",
        "__tests__",
        "spec",
        "specs",
        "fixtures",
        "testdata",
        "snapshots",
    ];
    let name = path.rsplit('/').next().unwrap_or(path).as_bytes();
    let has = |part: &str| {
        name.windows(part.len())
            .any(|w| w.eq_ignore_ascii_case(part.as_bytes()))
    };
    path.split('/')
        .any(|seg| DIRECTORIES.iter().any(|d| seg.eq_ignore_ascii_case(d)))
        || name
            .get(..5)
            .is_some_and(|start| start.eq_ignore_ascii_case(b"test_"))
        || ["_test.", ".test.", ".spec.", "_spec."]
            .into_iter()
            .any(has)
        || name
            .len()
            .checked_sub(5)
            .and_then(|at| name.get(at..))
            .is_some_and(|end| end.eq_ignore_ascii_case(b".snap"))
}

/// The top `top_k` chunks of snapshot `sha` and of the artifacts of `scopes` for `goal`, best
/// first, costed in `meter`.
pub fn retrieve(
    store: &Store,
    sha: &str,
    scopes: &[&str],
    goal: &str,
    top_k: usize,
    meter: Meter,
) -> Result<Vec<Retrieved>, IndexError> {
    retrieve_with(
        store,
        sha,
        scopes,
        goal,
        top_k,
        meter,
        &RetrieveOptions::default(),
    )
}

/// [`retrieve`] with explicit ranking options.
pub fn retrieve_with(
    store: &Store,
    sha: &str,
    scopes: &[&str],
    goal: &str,
    top_k: usize,
    meter: Meter,
    options: &RetrieveOptions,
) -> Result<Vec<Retrieved>, IndexError> {
    let scope = Scope {
        sha,
        artifacts: scopes,
        paths: None,
        overlay: None,
        history: None,
    };
    retrieve_in(store, &scope, goal, top_k, meter, options)
}

/// What a retrieval searches: one snapshot's files — all of them, or those a path filter
/// keeps, or with working-tree files in place of the ones they change — and the artifacts of
/// some scopes.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    /// The snapshot.
    pub sha: &'a str,
    /// Artifact scopes merged in (`session`, `harness`, `evidence`).
    pub artifacts: &'a [&'a str],
    /// Only snapshot and overlay paths this keeps.
    pub paths: Option<&'a PathFilter>,
    /// Working-tree chunks that replace the snapshot's files at their paths.
    pub overlay: Option<&'a Overlay>,
    /// The snapshot's past commits, whose messages are evidence for the files they touched.
    pub history: Option<&'a History>,
}

/// Chunks of files that are not stored (the working tree), searched in place of the snapshot
/// files at the same paths.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overlay {
    /// Snapshot paths left out: changed, deleted, or newly ignored in the working tree.
    pub replaced: HashSet<String>,
    /// The chunks (masked and chunked as indexing does).
    pub chunks: Vec<OverlayChunk>,
}

/// A working-tree chunk.
#[derive(Clone, Debug, PartialEq)]
pub struct OverlayChunk {
    /// Its file's path.
    pub path: String,
    /// The chunk, as indexing makes it.
    pub chunk: NewChunk,
}

/// The top `top_k` chunks of `scope` for `goal`, best first, costed in `meter`.
pub fn retrieve_in(
    store: &Store,
    scope: &Scope<'_>,
    goal: &str,
    top_k: usize,
    meter: Meter,
    options: &RetrieveOptions,
) -> Result<Vec<Retrieved>, IndexError> {
    let terms = QueryTerms::from_goal(goal);
    let k = top_k.saturating_mul(POOL_FACTOR).max(MIN_POOL);
    // Overlay rows get negative ids, which no stored chunk has.
    let mut overlay_rows: HashMap<i64, ChunkRow> = HashMap::new();
    let pool = if scope.paths.is_none() && scope.overlay.is_none() {
        store.search(scope.sha, scope.artifacts, &terms, k)?
    } else {
        let keep = |path: &str| scope.paths.is_none_or(|f| f.accepts(path));
        let listed = store
            .manifest(scope.sha)?
            .into_iter()
            .filter_map(|(path, id)| {
                (keep(&path) && scope.overlay.is_none_or(|o| !o.replaced.contains(&path)))
                    .then_some(id)
            });
        let files: FileSet = listed
            .chain(store.artifact_files(scope.artifacts)?)
            .map(|id| id as u64)
            .collect();
        let mut extra = Vec::new();
        for (n, c) in scope.overlay.iter().flat_map(|o| &o.chunks).enumerate() {
            if !keep(&c.path) {
                continue;
            }
            let id = -1 - n as i64;
            extra.push(ExtraDoc {
                id,
                path: c.path.clone(),
                start_line: c.chunk.start_line,
                end_line: c.chunk.end_line,
                symbol: c.chunk.symbol.clone(),
                text: c.chunk.text.clone(),
            });
            overlay_rows.insert(
                id,
                ChunkRow {
                    id,
                    file_id: 0,
                    path: c.path.clone(),
                    start_line: c.chunk.start_line,
                    end_line: c.chunk.end_line,
                    symbol: c.chunk.symbol.clone(),
                    text: c.chunk.text.clone(),
                    costs: c.chunk.costs,
                    redactions: c.chunk.redactions.clone(),
                    chunker: 0,
                    o200k_lines: None,
                },
            );
        }
        store.search_files(&files, &extra, &terms, k)?
    };
    if pool.is_empty() {
        return Ok(Vec::new());
    }
    let history = match scope.history {
        Some(h) if options.history_weight > 0.0 => h.file_scores(&terms),
        _ => HashMap::new(),
    };
    // Each pooled chunk's file: its version's path, read once per file (the lexical index
    // records which version a chunk belongs to), or the working tree's.
    let stored_paths = store.file_paths(
        pool.iter()
            .filter(|hit| hit.chunk_id > 0)
            .map(|hit| (hit.file_id, hit.chunk_id)),
    )?;
    let path_of = |hit: &LexicalHit| -> Option<&str> {
        match overlay_rows.get(&hit.chunk_id) {
            Some(row) => Some(row.path.as_str()),
            None => stored_paths.get(&hit.file_id).map(String::as_str),
        }
    };

    // File evidence, as if the file were one document: the text scores of its best chunks
    // add up, while its path and symbol matches count once (every chunk repeats the path).
    let mut per_file: HashMap<&str, FileEvidence> = HashMap::new();
    // Each pooled file once, with the id of its stored version (0 in the working tree).
    let mut files: BTreeMap<&str, i64> = BTreeMap::new();
    for hit in &pool {
        if let Some(path) = path_of(hit) {
            per_file.entry(path).or_default().add(hit.breakdown);
            files.entry(path).or_insert(hit.file_id);
        }
    }
    let best_chunk = pool
        .iter()
        .map(|h| h.score)
        .fold(f32::MIN_POSITIVE, f32::max);
    let best_file = per_file
        .values()
        .map(FileEvidence::score)
        .fold(f32::MIN_POSITIVE, f32::max);
    let mut leaders: Vec<(&str, f32)> = per_file.iter().map(|(p, e)| (*p, e.score())).collect();
    leaders.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    leaders.truncate(LEADERS);
    let cochange = match scope.history {
        Some(h) if options.cochange_weight > 0.0 => {
            let mut out: HashMap<&str, f32> = HashMap::new();
            for &(path, evidence) in &leaders {
                for (p, share) in h.companions(path) {
                    let v = out.entry(p).or_default();
                    *v = v.max(share * evidence / best_file);
                }
            }
            out
        }
        _ => HashMap::new(),
    };

    let imported = if options.import_weight > 0.0 {
        import_evidence(store, scope, &leaders, best_file, &files)?
    } else {
        HashMap::new()
    };

    // A hit's score before the test prior, and what it is made of.
    let blend = |hit: &LexicalHit, path: &str| {
        let file = per_file.get(path).map_or(0.0, FileEvidence::score);
        let past = history.get(path).copied().unwrap_or(0.0);
        let together = cochange.get(path).copied().unwrap_or(0.0);
        let import = imported.get(path).copied().unwrap_or(0.0);
        let blended = (1.0 - options.file_weight) * hit.score / best_chunk
            + options.file_weight * file / best_file
            + options.history_weight * past
            + options.cochange_weight * together
            + options.import_weight * import;
        let breakdown = Breakdown {
            bm25: hit.breakdown,
            chunk: hit.score,
            file,
            prior: 1.0,
            history: past,
            cochange: together,
            imported: import,
        };
        (blended, breakdown)
    };
    // Only a chunk's own test marker (in its head) is not known from its file, and it can only
    // apply the test prior: each hit's score is bounded from its file alone, and heads are read
    // best bound first until no hit left could rank among the best `top_k`.
    let mut bounds: Vec<(f32, usize)> = pool
        .iter()
        .enumerate()
        .filter_map(|(i, hit)| {
            let path = path_of(hit)?;
            let blended = blend(hit, path).0;
            let bound = if is_test_path(path) {
                blended * options.test_prior
            } else {
                blended.max(blended * options.test_prior)
            };
            Some((bound, i))
        })
        .collect();
    bounds.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut rows: HashMap<i64, ChunkHead> = HashMap::new();
    let mut scored: Vec<(f32, Breakdown, i64)> = Vec::with_capacity(top_k.min(bounds.len()));
    let mut next = 0;
    while next < bounds.len() && top_k > 0 {
        if scored.len() >= top_k && bounds[next].0 < kth_best(&scored, top_k) {
            break;
        }
        // The first read asks for half as many again as are kept; each later one for a quarter.
        let want = if next == 0 {
            top_k.saturating_add(top_k / 2)
        } else {
            (top_k / 4).max(HEADS_READ_AT_LEAST)
        };
        let batch = &bounds[next..bounds.len().min(next.saturating_add(want))];
        next += batch.len();
        let ids: Vec<i64> = batch
            .iter()
            .map(|&(_, i)| pool[i].chunk_id)
            .filter(|id| *id > 0)
            .collect();
        rows.extend(store.chunk_heads(&ids)?.into_iter().map(|r| (r.id, r)));
        for &(_, i) in batch {
            let hit = &pool[i];
            if let Some(row) = overlay_rows.get(&hit.chunk_id) {
                rows.insert(hit.chunk_id, row.head());
            }
            let Some(row) = rows.get(&hit.chunk_id) else {
                continue;
            };
            let (blended, mut breakdown) = blend(hit, &row.path);
            let in_test = is_test_path(&row.path) || is_test_chunk(row);
            breakdown.prior = if in_test { options.test_prior } else { 1.0 };
            scored.push((blended * breakdown.prior, breakdown, hit.chunk_id));
        }
    }
    // Best first; ties by path and position, which do not depend on the store's ids.
    let place = |id: &i64| {
        rows.get(id)
            .map(|r| (r.path.as_str(), r.start_line, r.end_line))
    };
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| place(&a.2).cmp(&place(&b.2)))
    });
    scored.truncate(top_k);
    let kept: Vec<i64> = scored.iter().map(|s| s.2).filter(|id| *id > 0).collect();
    let mut rows: HashMap<i64, ChunkRow> = store
        .chunks(&kept)?
        .into_iter()
        .map(|r| (r.id, r))
        .collect();
    rows.extend(overlay_rows);

    let mut artifacts: HashMap<i64, Option<ArtifactRow>> = HashMap::new();
    let mut out = Vec::with_capacity(scored.len());
    for (score, breakdown, id) in scored {
        let Some(row) = rows.remove(&id) else {
            continue;
        };
        let artifact = if row.path.starts_with(ARTIFACT_PREFIX) {
            match artifacts.get(&row.file_id) {
                Some(a) => a.clone(),
                None => {
                    let a = store.artifact_of_file(row.file_id)?;
                    artifacts.insert(row.file_id, a.clone());
                    a
                }
            }
        } else {
            None
        };
        let (citation, family, location, title) = match &artifact {
            Some(a) => {
                let kind = if a.scope == "evidence" {
                    "evidence"
                } else {
                    "artifact"
                };
                let family = if kind == "evidence" {
                    Family::evidence(&a.family_id)
                } else {
                    Family::artifact(&a.family_id)
                };
                (
                    Citation(format!(
                        "{kind}:{}#L{}-L{}",
                        a.id, row.start_line, row.end_line
                    )),
                    family,
                    None,
                    a.title.clone(),
                )
            }
            None => (
                if row.id < 0 {
                    Citation::worktree(&row.path, row.start_line, row.end_line)
                } else {
                    Citation::code(&row.path, row.start_line, row.end_line, scope.sha)
                },
                Family::document(&row.path),
                Some(Location {
                    path: row.path.clone(),
                    start_line: row.start_line,
                    end_line: row.end_line,
                    symbol: row.symbol.clone(),
                }),
                None,
            ),
        };
        let masked_by_current_rules = row.chunker == crate::indexer::STORED_CHUNKER;
        out.push(Retrieved {
            artifact: artifact.map(|a| a.id),
            candidate: Candidate {
                citation,
                family,
                cost: row.cost(meter),
                tier: Tier::Visible,
                score: Some(f64::from(score)),
                location,
                title,
                text: row.text,
            },
            score,
            breakdown,
            redactions: row.redactions,
            masked_by_current_rules,
            o200k_lines: row.o200k_lines.filter(|_| masked_by_current_rules),
        });
    }
    Ok(out)
}

/// The `k`-th best score of `scored` (which holds at least `k`).
fn kth_best(scored: &[(f32, Breakdown, i64)], k: usize) -> f32 {
    let mut scores: Vec<f32> = scored.iter().map(|s| s.0).collect();
    let (_, kth, _) = scores.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    *kth
}

/// Evidence along the import edges of the pool's best files (see [`crate::chunk::graph`]):
/// for each pooled file, the best `evidence / best_file` of a leader that imports it, split
/// among the pooled files that import reaches most closely. A leader's imports are those
/// indexing stored with the file version the snapshot lists (worked out from its stored chunks
/// for a version stored without them, and from the working tree's chunks for an overlay file),
/// so they change as soon as a commit that changes them is indexed.
fn import_evidence<'p>(
    store: &Store,
    scope: &Scope<'_>,
    leaders: &[(&str, f32)],
    best_file: f32,
    files: &BTreeMap<&'p str, i64>,
) -> Result<HashMap<&'p str, f32>, IndexError> {
    let paths = graph::PathIndex::new(files.keys().copied());
    let mut imported: HashMap<&str, f32> = HashMap::new();
    for &(leader, evidence) in leaders {
        if leader.starts_with(ARTIFACT_PREFIX) {
            continue;
        }
        let Some(&file_id) = files.get(leader) else {
            continue;
        };
        let stored = if file_id > 0 {
            store
                .file_imports(file_id, crate::indexer::STORED_CHUNKER)?
                .and_then(|text| graph::decode_imports(&text))
        } else {
            None
        };
        let imports = match stored {
            Some(imports) => imports,
            None if file_id > 0 => {
                let chunks = store.chunk_texts(file_id)?;
                graph::file_imports(leader, chunks.iter().map(String::as_str))
            }
            None => graph::file_imports(
                leader,
                scope
                    .overlay
                    .iter()
                    .flat_map(|o| &o.chunks)
                    .filter(|c| c.path == leader)
                    .map(|c| c.chunk.text.as_str()),
            ),
        };
        let share = evidence / best_file;
        // A package or a short module path that reaches many files says little about any
        // one of them, so an import's share is split among the files it reaches most closely.
        for import in imports {
            let reached: Vec<(&str, usize)> = paths
                .reached(&import)
                .into_iter()
                .filter(|(p, _)| *p != leader)
                .collect();
            let Some(closest) = reached.iter().map(|r| r.1).max() else {
                continue;
            };
            let meant: Vec<&str> = reached
                .iter()
                .filter(|r| r.1 == closest)
                .map(|r| r.0)
                .collect();
            for path in &meant {
                let v = imported.entry(path).or_default();
                *v = v.max(share / meant.len() as f32);
            }
        }
    }
    Ok(imported)
}

/// Paths of artifact file versions start with this.
pub const ARTIFACT_PREFIX: &str = "artifact:";

#[cfg(test)]
mod tests {
    use super::is_test_path;

    #[test]
    fn test_paths() {
        let cases: &[(&str, bool)] = &[
            ("src/select.rs", false),
            ("tests/it/main.rs", true),
            ("crates/core/tests/it/snapshots/a.snap", true),
            ("pkg/server_test.go", true),
            ("tests.py", false),
            ("test_client.py", true),
            ("web/app.spec.ts", true),
            ("web/app.test.js", true),
            ("src/testing_utils.rs", false),
            ("src/contest.rs", false),
            ("Tests/Unit/Client.cs", true),
            ("pkg/Server_TEST.go", true),
            ("TEST_client.py", true),
            ("crates/a/Snapshots/b.md", true),
            ("ui/Button.SNAP", true),
            ("snap", false),
            ("docs/überblick.md", false),
            ("src/spectrum.rs", false),
        ];
        for (path, expected) in cases {
            assert_eq!(is_test_path(path), *expected, "{path}");
        }
    }
}
