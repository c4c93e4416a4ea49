//! Snapshot packs and raw retrieval hits from the exact committed snapshot of a commit.

use std::collections::{HashMap, HashSet};

use ctxpack_core::{
    Budget, Candidate, Citation, DropReason, Dropped, Family, Hit, Location, Meter, Pack,
    PackRequest, RedactionSummary, RenderOptions, Selector, SnapshotInfo, Warning,
};
use ctxpack_index::git::Repo;
use ctxpack_index::history::{HISTORY_COMMITS, History};
use ctxpack_index::indexer::IndexOptions;
use ctxpack_index::paths::PathFilter;
use ctxpack_index::retrieve::{RetrieveOptions, Retrieved, Scope, retrieve_in};
use ctxpack_meter::LineCounts;
use ctxpack_store::{QueryTerms, Store, TermReader};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::control::Control;
use crate::error::{Ancestor, Error, ErrorKind, Hint, Result};
use crate::fit::Fit;
use crate::index::{IndexRequest, IndexSummary};
use crate::mask;
use crate::schema;
use crate::status::WorktreeCounts;
use crate::workspace::{RecordExtra, Recorded, Workspace};
use crate::worktree;

mod in_session;
mod request;
mod shape;

pub use crate::fit::BudgetCovers;
pub use request::*;
pub(crate) use shape::Source;
use shape::*;

impl Workspace {
    /// Builds a pack from the exact snapshot `request.at` resolves to; see
    /// [`Workspace::snapshot_pack_with`], here with no progress reports and no cancellation.
    pub fn snapshot_pack(
        &self,
        request: &SnapshotPackRequest,
        options: &PackOptions<'_>,
    ) -> Result<SnapshotPack> {
        self.snapshot_pack_with(request, options, &Control::new())
    }

    /// Builds a pack from the exact snapshot `request.at` resolves to.
    ///
    /// When that snapshot is not indexed and the request's `index` (or
    /// `options.index_if_missing`) is set, the commit is indexed first, incrementally, with
    /// `control`'s progress reports and cancellation (waiting for another writer to finish).
    /// A read-only workspace never writes; an unindexed snapshot is then
    /// [`ErrorKind::NotIndexed`] with a [`Hint::IndexCommit`] naming the nearest indexed
    /// ancestor, which is never packed instead. Artifacts of the request's scope are merged
    /// only after the exact snapshot is known to be indexed.
    pub fn snapshot_pack_with(
        &self,
        request: &SnapshotPackRequest,
        options: &PackOptions<'_>,
        control: &Control,
    ) -> Result<SnapshotPack> {
        if request.recall.is_empty() {
            check_goal(&request.goal)?;
        }
        crate::limits::check_meter(request.meter)?;
        in_session::check_request(request)?;
        self.admit_record(options.record)?;
        let session = self.open_session(request)?;
        if let Some(session) = &session
            && !request.recall.is_empty()
        {
            return self.recall(request, options, session);
        }
        if request.top_k == TopK::Fixed(0) {
            return Err(Error::invalid_field("top_k", "must be at least 1"));
        }
        let paths = path_filter(request)?;
        if request.worktree && request.at != "HEAD" {
            return Err(Error::invalid_field(
                "at",
                format!(
                    "the working tree is packed over HEAD, not over {}; drop `at` or `worktree`",
                    request.at
                ),
            ));
        }
        let repo = self.repo()?;
        let store_in_worktree = self.store_in_worktree();
        let source = repo.source();
        let (ranked, head) = std::thread::scope(|threads| {
            // HEAD and the working tree's status (for the "uncommitted changes" warning) are
            // read on the second core while this one resolves the commit, opens the store,
            // ranks and selects: the status stats every tracked file and walks the tree for new
            // ones, a third of a pack's work on a large repository, and neither needs the
            // other. Started as soon as the repository is open, it is done before shaping,
            // which wants both cores (when it is not, shaping's second thread waits). A
            // repository handle stays on its thread: the status opens its own. That thread
            // then compiles the masking rules, which selection needs, unless a front end had
            // them compiled already (`prepare_masking`): waiting for them first would hold the
            // status past the start of shaping, which wants this core.
            let status = crate::cores::spawn_beside(threads, move || -> Result<_> {
                // Wanted only once the pack is selected: shaping's second thread goes first.
                crate::cores::give_way();
                let repo = source.open()?;
                let head = repo.head()?;
                let changes =
                    WorktreeCounts::of(&repo, head.sha.as_deref(), store_in_worktree.as_deref());
                crate::mask::prepare();
                Ok((head, changes))
            });
            let ranked = repo
                .resolve(&request.at)
                .map_err(Error::from)
                .and_then(|sha| {
                    let ranked = self.rank(
                        &repo,
                        &sha,
                        request,
                        options,
                        control,
                        paths.as_ref(),
                        session.as_ref(),
                    )?;
                    Ok((ranked, sha))
                });
            let head = status
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (ranked, head)
        });
        // What stops the pack (an unindexed snapshot, a bad request) is said before what the
        // status met.
        let (
            Ranked {
                selected,
                store,
                overlay,
                fit,
                indexed,
                past_read,
            },
            sha,
        ) = ranked?;
        let (head, changes) = head?;
        let Selected {
            mut pack,
            artifact_of,
        } = selected;
        if pack.hits.is_empty()
            && !request.worktree
            && let Some(filter) = &paths
        {
            no_path_matches(&store, &sha, filter, request)?;
        }
        pack.snapshot = Some(SnapshotInfo {
            requested_ref: request.at.clone(),
            resolved_sha: sha.clone(),
            selection: "exact".into(),
            status: "indexed".into(),
            branch: head.branch,
            detached: head.detached,
            worktree_dirty: changes.is_dirty(),
        });
        match &overlay {
            // The changes are in the pack: say which, instead of warning they are not.
            Some(overlay) => pack.warnings.push(Warning::Notice(overlay.notice(&sha))),
            None => pack.warnings.extend(changes.warning()),
        }
        let mut used: Vec<String> = pack
            .hits
            .iter()
            .filter_map(|h| artifact_of.get(&h.candidate.citation).cloned())
            .collect();
        used.sort();
        used.dedup();
        pack.artifacts = used;
        crate::fit::add_enclosing(&repo, &store, &sha, &mut pack);
        // The store is read no more: closing it (SQLite's close, the unmapping of what it read)
        // is left to a thread of its own rather than to the pack's last steps.
        crate::cores::detach_beside(move || drop(store));
        fit.finish(&mut pack)?;
        // Cutting, widening and fitting changed what the hits show.
        pack.recount_redactions();
        pack.session = session.as_ref().map(|s| s.id().to_owned());
        let recorded = self.record(&pack, "pack", options.record, RecordExtra::default());
        if let Some(session) = &session {
            session.remember(&pack, &pack_id(&recorded))?;
        }
        Ok(SnapshotPack {
            pack,
            recorded,
            indexed,
            past_read,
        })
    }

    /// The pack of the indexed snapshot `sha` selected for `request` (indexed first when the
    /// request or `options` ask), before the snapshot's details are added.
    #[allow(clippy::too_many_arguments)]
    fn rank(
        &self,
        repo: &Repo,
        sha: &str,
        request: &SnapshotPackRequest,
        options: &PackOptions<'_>,
        control: &Control,
        paths: Option<&PathFilter>,
        session: Option<&in_session::Open>,
    ) -> Result<Ranked> {
        let (indexed, opened) = if request.index || options.index_if_missing {
            self.index_if_missing(repo, sha, control)?
        } else {
            (None, None)
        };
        // Artifacts come from the database too, before the store is searched for them
        // (each search reloads the lexical index, so a store opened before sees them).
        if let Some(record) = &self.snapshots
            && !request.scope.artifact_scopes().is_empty()
        {
            self.sync_artifacts(record)?;
        }
        let store = self.exact_snapshot(repo, sha, opened)?;
        let overlay = if request.worktree {
            Some(worktree::overlay(repo, sha, &IndexOptions::default())?)
        } else {
            None
        };
        let fit = Fit::new(request.budget_covers, options.rendering.or(options.record));
        let retrieve_options = RetrieveOptions::default();
        let stored = stored_past(&store, sha, &retrieve_options);
        let past_read = stored.is_none() && wants_past(&retrieve_options);
        let history = stored.or_else(|| past(repo, sha, &retrieve_options));
        let selected = retrieve_and_select(
            &store,
            &Scope {
                sha,
                artifacts: request.scope.artifact_scopes(),
                paths,
                overlay: overlay.as_ref().map(|o| &o.overlay),
                history: history.as_ref(),
            },
            &PackRequest {
                goal: request.goal.clone(),
                budget: request.budget,
                meter: request.meter,
                selector: request.selector,
            },
            request.top_k,
            request.shaping,
            &retrieve_options,
            &fit,
            session,
        )?;
        Ok(Ranked {
            selected,
            store,
            overlay,
            fit,
            indexed,
            past_read,
        })
    }

    /// The pack of what `session` was shown under the request's `recall` citations and pack
    /// ids, best first within the budget (what does not fit is dropped as over budget).
    fn recall(
        &self,
        request: &SnapshotPackRequest,
        options: &PackOptions<'_>,
        session: &in_session::Open,
    ) -> Result<SnapshotPack> {
        // A recall needs no goal: it says what it recalls.
        let goal = if request.goal.trim().is_empty() {
            let mut goal = format!("recall {}", request.recall.join(" "));
            goal.truncate(goal.floor_char_boundary(200));
            goal
        } else {
            request.goal.clone()
        };
        check_goal(&goal)?;
        let candidates = session.recall(&request.recall, request.meter)?;
        let fit = Fit::new(request.budget_covers, options.rendering.or(options.record));
        let mut redactions = RedactionSummary::default();
        let (mut pack, _) = fit.select(
            PackRequest {
                goal: mask::text(&goal, &mut redactions),
                budget: request.budget,
                meter: request.meter,
                selector: Selector::Skip,
            },
            candidates,
            0,
        );
        fit.finish(&mut pack)?;
        pack.set_redactions(redactions);
        pack.session = Some(session.id().to_owned());
        let recorded = self.record(&pack, "pack", options.record, RecordExtra::default());
        session.remember(&pack, &pack_id(&recorded))?;
        Ok(SnapshotPack {
            pack,
            recorded,
            indexed: None,
            past_read: false,
        })
    }

    /// Raw retrieval hits of the exact snapshot `request.at` resolves to, with each score's
    /// breakdown.
    pub fn query(&self, request: &QueryRequest) -> Result<QueryHits> {
        let (sha, hits) =
            self.retrieve_exact(&request.goal, &request.at, request.top_k, request.meter)?;
        Ok(QueryHits {
            goal: mask::text(&request.goal, &mut RedactionSummary::default()),
            snapshot_sha: sha,
            meter: request.meter,
            hits: hits
                .iter()
                .enumerate()
                .map(|(i, h)| QueryHit {
                    rank: i + 1,
                    citation: h.candidate.citation.0.clone(),
                    path: h.candidate.location.as_ref().map(|l| l.path.clone()),
                    symbol: h.candidate.location.as_ref().and_then(|l| l.symbol.clone()),
                    tokens: h.candidate.cost,
                    score: round4(h.score),
                    score_breakdown: ScoreParts {
                        text: round4(h.breakdown.bm25.text),
                        path: round4(h.breakdown.bm25.path),
                        symbol: round4(h.breakdown.bm25.symbol),
                        chunk: round4(h.breakdown.chunk),
                        file: round4(h.breakdown.file),
                        prior: round4(h.breakdown.prior),
                        history: round4(h.breakdown.history),
                        cochange: round4(h.breakdown.cochange),
                        imported: round4(h.breakdown.imported),
                    },
                })
                .collect(),
        })
    }

    /// Retrieval candidates of the exact snapshot `at` resolves to, with the resolved SHA.
    pub(crate) fn retrieve_exact(
        &self,
        goal: &str,
        at: &str,
        top_k: usize,
        meter: Meter,
    ) -> Result<(String, Vec<Retrieved>)> {
        check_goal(goal)?;
        crate::limits::check_meter(meter)?;
        if top_k == 0 {
            return Err(Error::invalid_field("top_k", "must be at least 1"));
        }
        let repo = self.repo()?;
        let sha = repo.resolve(at)?;
        let store = self.exact_snapshot(&repo, &sha, None)?;
        let options = RetrieveOptions::default();
        let history = stored_past(&store, &sha, &options).or_else(|| past(&repo, &sha, &options));
        let scope = Scope {
            sha: &sha,
            artifacts: &[],
            paths: None,
            overlay: None,
            history: history.as_ref(),
        };
        let hits = retrieve_in(&store, &scope, goal, top_k, meter, &options)?;
        Ok((sha, hits))
    }

    /// Opens the store and checks that the exact snapshot `sha` is indexed; names the nearest
    /// indexed ancestor as guidance when it is not (never packs it). `opened` is the store
    /// already open (a pack's check for an unindexed commit opens it first), used instead of
    /// opening it again.
    fn exact_snapshot(&self, repo: &Repo, sha: &str, opened: Option<Store>) -> Result<Store> {
        if let Some(record) = &self.snapshots {
            // The database decides what is indexed; the store is its cache.
            let Some(published) = record.published(sha)? else {
                let published: HashSet<String> = record.shas()?.into_iter().collect();
                return Err(not_indexed(
                    sha,
                    format!("snapshot {sha} is not indexed"),
                    nearest(repo, sha, &published),
                ));
            };
            // The cache usually has it: open the store once, and fill it only when it does not.
            if let Some(store) = self.store_or_open(repo, opened)?
                && store.snapshot(sha)?.is_some()
            {
                return Ok(store);
            }
            self.fill_cache(record, &published)?;
            let store = self.try_open_store_with(Some(repo))?;
            return self.holding(repo, sha, store);
        }
        let store = self.store_or_open(repo, opened)?;
        self.holding(repo, sha, store)
    }

    /// `opened`, or the store opened read-only (`None` when there is none).
    fn store_or_open(&self, repo: &Repo, opened: Option<Store>) -> Result<Option<Store>> {
        match opened {
            Some(store) => Ok(Some(store)),
            None => self.try_open_store_with(Some(repo)),
        }
    }

    /// `store` when it holds snapshot `sha`; else why not, and the nearest indexed ancestor.
    fn holding(&self, repo: &Repo, sha: &str, store: Option<Store>) -> Result<Store> {
        let Some(store) = store else {
            return Err(not_indexed(
                sha,
                format!(
                    "snapshot {sha} is not indexed: no store at {}",
                    self.store_dir()?.display()
                ),
                None,
            ));
        };
        if store.snapshot(sha)?.is_some() {
            return Ok(store);
        }
        let indexed: HashSet<String> = store.snapshots()?.into_iter().map(|s| s.sha).collect();
        Err(not_indexed(
            sha,
            format!("snapshot {sha} is not indexed"),
            nearest(repo, sha, &indexed),
        ))
    }

    /// Indexes `sha` when it is not indexed yet and the workspace may index (see
    /// [`Access`]); otherwise it writes nothing (the caller then finds the snapshot missing).
    /// With the summary of what it indexed, the store it opened to look, when that already
    /// held the snapshot, for the caller to read.
    fn index_if_missing(
        &self,
        repo: &Repo,
        sha: &str,
        control: &Control,
    ) -> Result<(Option<IndexSummary>, Option<Store>)> {
        if !self.may_index() {
            return Ok((None, None));
        }
        let (missing, opened) = match (&self.snapshots, self.try_open_store_with(Some(repo))?) {
            (Some(record), opened) => (record.published(sha)?.is_none(), opened),
            (None, Some(store)) => (store.snapshot(sha)?.is_none(), Some(store)),
            (None, None) => (true, None),
        };
        if !missing {
            return Ok((None, opened));
        }
        let request = IndexRequest {
            at: sha.to_owned(),
            // A writer already at work (a hook indexing the new commit, say) is waited for;
            // the snapshot is then usually there and indexing it again is a no-op.
            wait: true,
            ..IndexRequest::default()
        };
        Ok((Some(self.index(&request, control)?), None))
    }
}

/// Snapshot `sha` is not indexed: `message` says why, with a hint to index it (or to pack its
/// `nearest` indexed ancestor).
fn not_indexed(sha: &str, message: String, nearest: Option<Ancestor>) -> Error {
    Error::new(ErrorKind::NotIndexed, message).with_hint(Hint::IndexCommit {
        sha: sha.to_owned(),
        nearest,
    })
}

/// The nearest first-parent ancestor of `sha` among `indexed`, within [`ANCESTOR_SEARCH`]
/// commits: what a "not indexed" error suggests instead.
fn nearest(repo: &Repo, sha: &str, indexed: &HashSet<String>) -> Option<Ancestor> {
    repo.ancestors(sha, ANCESTOR_SEARCH)
        .into_iter()
        .enumerate()
        .find(|(_, a)| indexed.contains(a))
        .map(|(n, a)| Ancestor {
            sha: a,
            distance: n + 1,
        })
}

/// Fails when no file of snapshot `sha` passes the request's path filter: an empty pack would
/// say that nothing matched the goal, when the globs are what matched nothing.
fn no_path_matches(
    store: &Store,
    sha: &str,
    filter: &PathFilter,
    request: &SnapshotPackRequest,
) -> Result<()> {
    if store
        .manifest(sha)?
        .iter()
        .any(|(path, _)| filter.accepts(path))
    {
        return Ok(());
    }
    let quoted = |globs: &[String]| {
        globs
            .iter()
            .map(|g| format!("'{g}'"))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    let (field, message) = match (request.include.is_empty(), request.exclude.is_empty()) {
        (false, true) => (
            "include",
            format!("no file matches {}", quoted(&request.include)),
        ),
        (false, false) => (
            "include",
            format!(
                "no file matches {} once {} are left out",
                quoted(&request.include),
                quoted(&request.exclude)
            ),
        ),
        (true, _) => (
            "exclude",
            format!("{} leaves out every file", quoted(&request.exclude)),
        ),
    };
    let short = &sha[..sha.len().min(12)];
    Err(
        Error::invalid_field(field, format!("{message} in snapshot {short}"))
            .with_hint(Hint::Advice(
            "globs follow git's wildmatch from the repository root: `src/**`, `*.rs`, `docs/*.md`"
                .into(),
        )),
    )
}

/// The request's include and exclude globs, parsed; `None` when there are none. A bad glob
/// is invalid input on its field.
fn path_filter(request: &SnapshotPackRequest) -> Result<Option<PathFilter>> {
    if request.include.is_empty() && request.exclude.is_empty() {
        return Ok(None);
    }
    PathFilter::new(&request.include, &request.exclude)
        .map(Some)
        .map_err(Error::from)
}

/// The id `recorded` gave a pack, or a new one for a pack no ledger recorded.
fn pack_id(recorded: &Recorded) -> String {
    recorded
        .id()
        .map_or_else(crate::session::unrecorded_pack_id, str::to_owned)
}

/// Whether ranking with `options` reads a snapshot's past at all.
fn wants_past(options: &RetrieveOptions) -> bool {
    options.history_weight > 0.0 || options.cochange_weight > 0.0
}

/// The past of snapshot `sha` that ranking reads, read from git, when its options weigh past
/// messages or co-change at all.
pub(crate) fn past(repo: &Repo, sha: &str, options: &RetrieveOptions) -> Option<History> {
    wants_past(options).then(|| History::load(repo, sha, HISTORY_COMMITS))
}

/// The past of snapshot `sha` as stored when it was indexed, when ranking reads one and the
/// store has it.
fn stored_past(store: &Store, sha: &str, options: &RetrieveOptions) -> Option<History> {
    wants_past(options)
        .then(|| History::stored(store, sha))
        .flatten()
}

/// A pack selected from one snapshot's retrieval, before the snapshot's details are added.
pub(crate) struct Selected {
    /// The pack, its redactions counted.
    pub(crate) pack: Pack,
    /// The artifact each artifact candidate came from, by citation.
    pub(crate) artifact_of: HashMap<Citation, String>,
}

/// What a snapshot pack has once it is selected, beside the working tree's status.
struct Ranked {
    selected: Selected,
    store: Store,
    overlay: Option<worktree::WorktreeOverlay>,
    fit: Fit,
    indexed: Option<IndexSummary>,
    past_read: bool,
}

/// Selection leaves budget unused, for widening a pool sized to the budget, when more than
/// this fraction (1 / n) of it is left.
const UNUSED_SHARE_TO_WIDEN: u64 = 10;

/// Retrieves the candidates of snapshot `sha` (and of the artifact `scopes`) for the goal,
/// masks them with today's rules, and selects under the budget. A pool
/// [sized to the budget](TopK::SizedToBudget) is retrieved again, twice as large, while
/// selection leaves more than a tenth of the budget unused and retrieval returned as many
/// candidates as asked, none of them weak, up to [`MAX_POOL_GROWTH`] times the first pool; the
/// pack of the last retrieval is the result.
#[allow(clippy::too_many_arguments)]
pub(crate) fn retrieve_and_select(
    store: &Store,
    scope: &Scope<'_>,
    request: &PackRequest,
    top_k: TopK,
    shaping: Shaping,
    options: &RetrieveOptions,
    fit: &Fit,
    session: Option<&in_session::Open>,
) -> Result<Selected> {
    let budget = request.budget;
    let mut pool = top_k.first_pool(budget);
    let lines = cut_lines(budget);
    let focused = shaping == Shaping::Focused;
    loop {
        let mut retrieved = retrieve_in(store, scope, &request.goal, pool, request.meter, options)?;
        let asked = retrieved.len() == pool;
        let weak = if focused {
            split_weak(&mut retrieved)
        } else {
            Vec::new()
        };
        // Retrieval is best first: once some are weak, a larger pool adds weaker ones.
        let ran_dry = !asked || !weak.is_empty();
        // Only what may be cut needs the goal's terms weighed; what may be cut may also be
        // glimpsed.
        let terms = focused.then(|| {
            let texts: Vec<&str> = retrieved
                .iter()
                .map(|r| r.candidate.text.as_str())
                .collect();
            GoalTerms::new(&request.goal, &texts)
        });
        let mut redactions = RedactionSummary::default();
        let mut artifact_of = HashMap::new();
        let mut glimpses = Vec::new();
        // Each cut candidate as it was, by rank, for a pack with budget left.
        let mut uncut = Vec::new();
        let mut candidates = Vec::with_capacity(retrieved.len());
        let whole = shown_whole(retrieved.iter().map(|r| r.candidate.cost), budget);
        let shaped = shape_all(
            retrieved,
            terms.as_ref(),
            lines,
            whole,
            request.meter,
            scope.sha,
        );
        for (i, s) in shaped.into_iter().enumerate() {
            for (kind, n) in &s.redactions.by_kind {
                redactions.add(kind, *n);
            }
            if let Some(id) = s.artifact {
                artifact_of.insert(s.candidate.citation.clone(), id);
            }
            if let Some(g) = s.glimpse {
                glimpses.push((i + 1, g));
            }
            uncut.push(s.uncut);
            candidates.push(s.candidate);
        }
        // What the session was shown becomes references, before anything is counted.
        let seen = session
            .map(|s| {
                s.mark(
                    &mut candidates,
                    &mut uncut,
                    &mut glimpses,
                    request.meter,
                    scope.sha,
                    focused,
                )
            })
            .unwrap_or_default();
        let offered = candidates.len();
        let withhold = if glimpses.is_empty() {
            0
        } else {
            GLIMPSE_SHARE
        };
        let (mut pack, spent) = fit.select(
            PackRequest {
                goal: mask::text(&request.goal, &mut redactions),
                ..request.clone()
            },
            candidates,
            withhold,
        );
        // References are shown as such from here on: what the output adds is measured on them.
        for hit in &mut pack.hits {
            hit.seen = seen.get(&hit.candidate.citation).cloned();
        }
        // A pool is widened for what selection left unused, not for glimpses that found too
        // few further files to spend their share.
        let unused = budget.get().saturating_sub(spent);
        // What the output adds around its evidence is held to its share: hits past it give
        // their budget to glimpses and depth, which the share also bounds.
        let (freed, around) = fit.hold_around(&mut pack);
        let left = add_glimpses(&mut pack, glimpses, unused + freed, fit, around);
        let withheld = budget.get().checked_div(withhold).unwrap_or(0);
        let widen_above = budget.get() / UNUSED_SHARE_TO_WIDEN;
        let widened = if ran_dry || unused <= widen_above + withheld {
            None
        } else {
            top_k.widened(budget, pool)
        };
        if let Some(larger) = widened {
            pool = larger;
            continue;
        }
        deepen(&mut pack, uncut, left, fit);
        leave_out_weak(&mut pack, weak, offered);
        // Counted once the hits are final: deepening shows cut hits whole again.
        pack.set_redactions(redactions);
        return Ok(Selected { pack, artifact_of });
    }
}

/// A file of a snapshot as ctxpack indexed it: its chunks' text (masked, as packs show it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedFile {
    /// The commit.
    pub sha: String,
    /// The path.
    pub path: String,
    /// Why it was not chunked (too large, binary, …), if it was not.
    pub skipped: Option<String>,
    /// Its lines, from line 1, as the chunks cover them; lines no chunk covers are absent
    /// (`None`).
    pub lines: Vec<Option<String>>,
}

impl Workspace {
    /// The file `path` of the indexed snapshot `at` as ctxpack indexed it: what a citation
    /// into it points at. Reads only the store (never the checkout), so what it shows is
    /// masked exactly as packs are.
    pub fn indexed_file(&self, at: &str, path: &str) -> Result<IndexedFile> {
        let repo = self.repo()?;
        let sha = repo.resolve(at)?;
        let store = self.exact_snapshot(&repo, &sha, None)?;
        let id = store
            .manifest_entry(&sha, path)?
            .ok_or_else(|| Error::not_found(format!("snapshot {sha} has no file {path}")))?;
        let file = store.export_file(id)?;
        let mut lines: Vec<Option<String>> = Vec::new();
        for chunk in &file.chunks {
            let start = chunk.start_line.max(1) as usize;
            for (offset, line) in chunk.text.lines().enumerate() {
                let number = start + offset;
                if lines.len() < number {
                    lines.resize(number, None);
                }
                let slot = &mut lines[number - 1];
                if slot.is_none() {
                    *slot = Some(line.to_owned());
                }
            }
        }
        Ok(IndexedFile {
            sha,
            path: path.to_owned(),
            skipped: file.skip_reason,
            lines,
        })
    }
}
