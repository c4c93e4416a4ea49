//! Candidates, hits and the reasons a candidate is left out.

use std::fmt;

use ctxpack_meter::Meter;

/// The stable, re-fetchable identity of a piece of evidence. Deduplication compares citation
/// ids exactly.
///
/// Code is cited as `path#Lstart-Lend@sha7`, documents as `doc:<collection>/<_id>`, artifacts
/// by their id (`evidence:<id>#Lx-Ly` for a chunk of a log).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Citation(pub String);

/// What a working-tree citation names in place of a commit.
pub const WORKTREE: &str = "worktree";

impl Citation {
    /// The citation of a line range of a file in a snapshot.
    pub fn code(path: &str, start_line: u32, end_line: u32, sha: &str) -> Citation {
        let short = sha.get(..7).unwrap_or(sha);
        Citation(format!("{path}#L{start_line}-L{end_line}@{short}"))
    }

    /// The citation of a line range of a file in the working tree, which no commit holds: it
    /// says so in full (`path#L1-L9@worktree`).
    pub fn worktree(path: &str, start_line: u32, end_line: u32) -> Citation {
        Citation(format!("{path}#L{start_line}-L{end_line}@{WORKTREE}"))
    }

    /// Whether `citation` names a range of the working tree rather than of a commit.
    pub fn is_worktree(citation: &str) -> bool {
        citation
            .strip_suffix(WORKTREE)
            .is_some_and(|rest| rest.ends_with('@'))
    }

    /// The citation id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Citation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The unit of diversity: hits of one family come from one source.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Family(pub String);

impl Family {
    /// `document:<path>`: a file of a snapshot.
    pub fn document(path: &str) -> Family {
        Family(format!("document:{path}"))
    }

    /// `artifact:<artifactId ?? sourceId>`: a session or harness artifact.
    pub fn artifact(id: &str) -> Family {
        Family(format!("artifact:{id}"))
    }

    /// `evidence:<artifactId ?? sourceId>`: an evidence artifact.
    pub fn evidence(id: &str) -> Family {
        Family(format!("evidence:{id}"))
    }

    /// `collection:<collection>/<_id>`: one JSON document of a collection.
    pub fn collection(collection: &str, id: &str) -> Family {
        Family(format!("collection:{collection}/{id}"))
    }

    /// The family a bare citation implies when the producer named none: `document:` followed by
    /// the citation up to its first `#` or `@` (so the chunks of one file share a family).
    pub fn from_citation(citation: &Citation) -> Family {
        let id = citation.as_str();
        let end = id.find(['#', '@']).unwrap_or(id.len());
        Family::document(&id[..end])
    }

    /// The family as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The visibility tier of a candidate. Pinned candidates are considered before every visible
/// one and are never dropped to make room for a visible candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Considered first.
    Pinned,
    /// Considered after every pinned candidate, in rank order.
    #[default]
    Visible,
}

impl Tier {
    /// The tier's name, as rendered.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Pinned => "pinned",
            Tier::Visible => "visible",
        }
    }
}

/// Where a candidate's text comes from, when it is a span of a file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// The symbol the span defines, when the chunker knows it.
    pub symbol: Option<String>,
}

/// A piece of evidence offered to selection. Candidates arrive in retrieval rank order.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Identity compared by deduplication.
    pub citation: Citation,
    /// Unit of diversity.
    pub family: Family,
    /// The complete text; hits are never cut.
    pub text: String,
    /// Cost of `text` in the pack's meter.
    pub cost: u64,
    /// Pinned or visible.
    pub tier: Tier,
    /// Retrieval score, when the producer has one. Higher is better.
    pub score: Option<f64>,
    /// File span, when the candidate is one.
    pub location: Option<Location>,
    /// A human title (artifact title, document title).
    pub title: Option<String>,
}

impl Candidate {
    /// A visible candidate whose cost is measured with `meter` and whose family is derived
    /// from the citation.
    pub fn new(citation: impl Into<String>, text: impl Into<String>, meter: Meter) -> Candidate {
        let citation = Citation(citation.into());
        let text = text.into();
        Candidate {
            family: Family::from_citation(&citation),
            cost: meter.count(&text),
            citation,
            text,
            tier: Tier::Visible,
            score: None,
            location: None,
            title: None,
        }
    }

    /// Sets the family.
    pub fn with_family(mut self, family: Family) -> Candidate {
        self.family = family;
        self
    }

    /// Sets the tier.
    pub fn with_tier(mut self, tier: Tier) -> Candidate {
        self.tier = tier;
        self
    }

    /// Sets the retrieval score.
    pub fn with_score(mut self, score: f64) -> Candidate {
        self.score = Some(score);
        self
    }
}

/// A selected candidate with its 1-based position in the incoming rank order.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// 1-based retrieval rank among all incoming candidates.
    pub rank: usize,
    /// The candidate as offered.
    pub candidate: Candidate,
    /// In a session's pack, what of its lines the session was shown before.
    pub seen: Option<Seen>,
}

/// What a session was shown before of a hit's lines: the same lines, with the same text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The id of the pack that showed them.
    pub pack: String,
    /// The range that pack showed them in, as it cited it.
    pub citation: Citation,
    /// Every line was shown: the hit is a reference, its text a one-line note. Otherwise the
    /// hit shows only lines not shown before (cited by exactly those).
    pub whole: bool,
    /// What showing its lines again would have cost beyond this hit's cost, in the pack's
    /// meter.
    pub saved: u64,
}

/// Why a candidate (or a plan member) is not in the pack.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// An earlier candidate had the same citation id.
    Duplicate,
    /// It did not fit the budget that remained when it was considered.
    OverBudget,
    /// A prefix selector stopped at an earlier candidate that did not fit.
    PrefixTruncated,
    /// A plan excluded it.
    Excluded,
    /// A plan member whose name was never bound to a value.
    Unbound,
    /// Far weaker evidence than the pack's best: a score under a fifth of the best
    /// candidate's, and nothing from the repository's history or imports. A pack with budget
    /// left leaves it unspent rather than fill it with noise.
    Weak,
}

impl DropReason {
    /// The name used in output.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Duplicate => "duplicate",
            DropReason::OverBudget => "over_budget",
            DropReason::PrefixTruncated => "prefix_truncated",
            DropReason::Excluded => "excluded",
            DropReason::Unbound => "unbound",
            DropReason::Weak => "weak",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A candidate left out of the pack, with the reason.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dropped {
    /// 1-based retrieval rank, when it was a candidate (plan members that never became
    /// candidates have none).
    pub rank: Option<usize>,
    /// The citation id.
    pub citation: Citation,
    /// The source family.
    pub family: Family,
    /// Its cost in the pack's meter.
    pub cost: u64,
    /// Why it is not in the pack.
    pub reason: DropReason,
    /// The budget that remained when it was considered, for budget drops.
    pub remaining: Option<u64>,
}
