//! A ctx: named members with a purpose, a budget and a meter, built into a pack.
//!
//! This is the seed's `ctx` semantics as a pure function, shared by plans and by programs that
//! use the builder directly:
//!
//! - **Pure.** Building selects and labels existing values; it does no IO.
//! - **Sizes.** Each candidate costs `meter.count(json)`, where `json` is the JSON of its stored
//!   value (a JSON string, quotes and escapes included). With the default `chars` meter that is
//!   the seed's v1 counter, the JSON length.
//! - **Priority order.** The pinned tier first, then declared order (candidates are ranked so,
//!   and a citation offered twice is kept where it ranks first); drop-and-continue, so one
//!   oversized early member never evicts the smaller members after it, and a pinned member is
//!   never dropped to make room for a plainer one. Selection is the core engine's
//!   [`Selector::Skip`], so its counters and invariants hold.
//! - **Nothing silent.** Every member that is not in the pack is a [`Shrunk`] record (and a
//!   `dropped` entry of the pack): over budget, excluded, unbound or a duplicate citation. An
//!   unbound member contributes nothing and is reported, never an error.
//! - **Immutable versions.** A `Ctx` is a value: appending members (`+=`) is
//!   `prior.clone().include(…)`, and the prior value is untouched. Versions share their
//!   members: a member is held once, behind an [`Arc`], with its masked text and its size, so
//!   cloning a version copies one pointer per member, and building it masks and counts
//!   nothing a version before it already did. 4,000 `+=` versions of a growing ctx hold
//!   their member lists as pointers, not 4,000 copies of every text.
//!
//! ```
//! use ctxpack_plan::{Ctx, Value};
//! use ctxpack_core::{DropReason, Tier};
//!
//! let debug = Ctx::new("explain a failing selection test")
//!     .named("debug")
//!     .budget(45)
//!     .include("src", Value::text("fn select() { /* 30 chars */ }"))
//!     .include("log", Value::text("thread 'main' panicked at select.rs"))
//!     .include("note", Value::text("flaky"))
//!     .pin("log");
//! let built = debug.build().unwrap();
//! // The pinned `log` goes first; `src` no longer fits and is dropped; `note` still fits.
//! let cited: Vec<_> = built.pack.hits.iter().map(|h| h.candidate.citation.as_str()).collect();
//! assert_eq!(cited, ["plan:debug/log", "plan:debug/note"]);
//! assert_eq!(built.pack.hits[0].candidate.tier, Tier::Pinned);
//! assert_eq!(built.shrunk[0].member, "src");
//! assert_eq!(built.shrunk[0].reason, DropReason::OverBudget);
//! assert_eq!(built.pack.used, 44);
//!
//! // `+=`: a new version; the prior one is unchanged.
//! let more = debug.clone().include("hint", Value::text("look at Tier"));
//! assert_eq!(more.members().len(), 4);
//! assert_eq!(debug.members().len(), 3);
//! assert_eq!(more.members().last().map(|m| m.name.as_str()), Some("hint"));
//!
//! // A 0 budget is rejected.
//! assert!(Ctx::new("nothing").budget(0).build().is_err());
//! ```

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, OnceLock};

use ctxpack_core::{
    Budget, Candidate, Citation, DropReason, Dropped, Family, Masker, Meter, Pack, PackRequest,
    Selector, Tier, Warning,
};

use crate::PlanError;
use crate::value::Value;

/// One member of a ctx.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// The name it is known by (and cited with, for a text).
    pub name: String,
    /// Pinned or visible.
    pub tier: Tier,
    /// Its value, or why it has none.
    pub binding: Binding,
}

/// A member's value, or why it has none.
#[derive(Clone, Debug, PartialEq)]
pub enum Binding {
    /// The value.
    Bound(Value),
    /// No value: the name is not bound at that point, or its source failed. The reason.
    Unbound(String),
}

/// A ctx value: purpose, budget, meter, members and exclusions. See the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct Ctx {
    name: String,
    purpose: String,
    budget: u64,
    meter: Meter,
    /// Shared with every version that has them (see the module docs).
    members: Vec<Arc<Shared>>,
    exclude: Vec<String>,
}

/// A member as the versions that have it share it: the member, and what building it needs,
/// worked out once.
struct Shared {
    member: Member,
    prepared: OnceLock<Prepared>,
}

/// A member's texts (one for a text value, one per hit), masked, and their sizes.
struct Prepared {
    /// The masked texts, in order.
    texts: Vec<String>,
    /// The secrets masked in them, and before they got here, by kind.
    redactions: BTreeMap<String, u64>,
    /// The sizes of `texts` in the meter of the first build that needed them.
    sizes: OnceLock<(Meter, Vec<u64>)>,
}

impl Shared {
    fn new(member: Member) -> Arc<Shared> {
        Arc::new(Shared {
            member,
            prepared: OnceLock::new(),
        })
    }

    /// The masked texts, masking them on first use; `work` counts what it does.
    fn prepared(&self, work: &mut u64) -> Option<&Prepared> {
        let Binding::Bound(value) = &self.member.binding else {
            return None;
        };
        Some(self.prepared.get_or_init(|| {
            let mut redactions = BTreeMap::new();
            let texts = match value {
                Value::Text(text) => vec![masked(&text.text, &mut redactions)],
                Value::Hits(hits) => hits
                    .iter()
                    .map(|hit| {
                        add_counts(&mut redactions, hit.redactions.clone());
                        masked(&hit.text, &mut redactions)
                    })
                    .collect(),
            };
            *work += texts.len() as u64;
            Prepared {
                texts,
                redactions,
                sizes: OnceLock::new(),
            }
        }))
    }
}

impl Prepared {
    /// The texts' sizes in `meter`: counted once for the meter a ctx is built in (a ctx
    /// rarely changes its meter; if it does, they are counted again, not kept).
    fn sizes(&self, meter: Meter, work: &mut u64) -> std::borrow::Cow<'_, [u64]> {
        let count = |work: &mut u64| -> Vec<u64> {
            *work += self.texts.len() as u64;
            self.texts.iter().map(|t| size_of(t, meter)).collect()
        };
        let (counted, sizes) = self.sizes.get_or_init(|| (meter, count(work)));
        if *counted == meter {
            std::borrow::Cow::Borrowed(sizes)
        } else {
            std::borrow::Cow::Owned(count(work))
        }
    }
}

/// `text` masked, with what was masked added to `redactions`.
fn masked(text: &str, redactions: &mut BTreeMap<String, u64>) -> String {
    let (masked, found) = masker().mask(text);
    add_counts(redactions, found);
    masked.into_owned()
}

impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        self.member == other.member
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.member.fmt(f)
    }
}

/// A member left out of a ctx's pack, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shrunk {
    /// The member's name.
    pub member: String,
    /// The citation left out (`plan:<ctx>/<member>`, or a hit's own citation).
    pub citation: Citation,
    /// Its size in the ctx's meter (0 for an unbound member).
    pub size: u64,
    /// The budget that remained when it was considered (for budget drops).
    pub remaining: Option<u64>,
    /// Why it is not in the pack.
    pub reason: DropReason,
    /// More about the reason (why a member is unbound).
    pub detail: Option<String>,
}

/// A built ctx: its pack and everything it left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Built {
    /// The pack (goal = purpose, selector = drop-and-continue).
    pub pack: Pack,
    /// The members left out, in priority order (pinned tier first, then declared order).
    pub shrunk: Vec<Shrunk>,
}

fn masker() -> &'static Masker {
    static MASKER: OnceLock<Masker> = OnceLock::new();
    MASKER.get_or_init(Masker::new)
}

/// The size of a stored text in `meter`: the count of its JSON string.
pub fn size_of(text: &str, meter: Meter) -> u64 {
    meter.count(&serde_json::Value::String(text.to_owned()).to_string())
}

impl Ctx {
    /// The default meter: `chars` (the seed's v1 counter).
    pub const DEFAULT_METER: Meter = Meter::Chars;

    /// An empty ctx named `ctx`, with the largest budget and the `chars` meter.
    pub fn new(purpose: impl Into<String>) -> Ctx {
        Ctx {
            name: "ctx".into(),
            purpose: purpose.into(),
            budget: Budget::MAX,
            meter: Self::DEFAULT_METER,
            members: Vec::new(),
            exclude: Vec::new(),
        }
    }

    /// Sets the name (used in citations: `plan:<name>/<member>`).
    pub fn named(mut self, name: impl Into<String>) -> Ctx {
        self.name = name.into();
        self
    }

    /// Sets the budget; it is validated by [`Ctx::build`] (0 is rejected).
    pub fn budget(mut self, budget: u64) -> Ctx {
        self.budget = budget;
        self
    }

    /// Sets the meter the budget and sizes are counted in.
    pub fn meter(mut self, meter: Meter) -> Ctx {
        self.meter = meter;
        self
    }

    /// Adds a member with a value, after the others. A member of that name already there
    /// (pinned ahead of its value, say) gets the value and keeps its place and tier.
    pub fn include(self, name: impl Into<String>, value: Value) -> Ctx {
        self.set(name.into(), Binding::Bound(value))
    }

    /// Adds a member that has no value (its source failed, or it is not bound yet). It
    /// contributes nothing and is reported.
    pub fn unbound(self, name: impl Into<String>, reason: impl Into<String>) -> Ctx {
        self.set(name.into(), Binding::Unbound(reason.into()))
    }

    /// Adds a member, or gives the member of that name this binding (keeping its place and
    /// tier).
    pub(crate) fn set(mut self, name: String, binding: Binding) -> Ctx {
        if let Some(m) = self.members.iter_mut().find(|m| m.member.name == name) {
            let tier = m.member.tier;
            *m = Shared::new(Member {
                name,
                tier,
                binding,
            });
        } else {
            self.members.push(Shared::new(Member {
                name,
                tier: Tier::Visible,
                binding,
            }));
        }
        self
    }

    /// Adds a member the caller knows is not one yet, without looking for it: how evaluation
    /// adds members, so a `+=` costs what it adds and not a search of the members before.
    pub(crate) fn push_new(mut self, name: String, binding: Binding, tier: Tier) -> Ctx {
        self.members.push(Shared::new(Member {
            name,
            tier,
            binding,
        }));
        self
    }

    /// Excludes a name the caller knows is not excluded yet.
    pub(crate) fn exclude_new(mut self, name: String) -> Ctx {
        self.exclude.push(name);
        self
    }

    /// How many members the ctx has (what cloning it copies).
    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    /// Pins a member: it goes into the pinned tier, ahead of every visible member. Pinning a
    /// name not included yet adds it (unbound until it is included).
    pub fn pin(mut self, name: impl Into<String>) -> Ctx {
        let name = name.into();
        if let Some(m) = self.members.iter_mut().find(|m| m.member.name == name) {
            if m.member.tier != Tier::Pinned {
                *m = Shared::new(Member {
                    tier: Tier::Pinned,
                    ..m.member.clone()
                });
            }
        } else {
            self.members.push(Shared::new(Member {
                binding: Binding::Unbound(format!("`{name}` is pinned but has no value")),
                name,
                tier: Tier::Pinned,
            }));
        }
        self
    }

    /// Excludes a name: it never enters the pack, in this version or any later one, and is
    /// reported as `excluded`.
    pub fn exclude(mut self, name: impl Into<String>) -> Ctx {
        let name = name.into();
        if !self.exclude.contains(&name) {
            self.exclude.push(name);
        }
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The purpose.
    pub fn purpose(&self) -> &str {
        &self.purpose
    }

    /// The members, in declared order.
    pub fn members(&self) -> impl ExactSizeIterator<Item = &Member> + DoubleEndedIterator {
        self.members.iter().map(|m| &m.member)
    }

    /// The excluded names.
    pub fn excluded(&self) -> &[String] {
        &self.exclude
    }

    /// The budget as set (not yet validated).
    pub fn budget_value(&self) -> u64 {
        self.budget
    }

    /// The meter.
    pub fn meter_value(&self) -> Meter {
        self.meter
    }

    /// The citation of a text member.
    pub fn citation_of(&self, member: &str) -> Citation {
        Citation(format!("plan:{}/{member}", self.name))
    }

    /// Builds the pack: validates the budget, masks and sizes every candidate, selects with
    /// the pinned tier first and drop-and-continue, and reports every member left out.
    pub fn build(&self) -> Result<Built, PlanError> {
        self.build_counted(&mut 0)
    }

    /// [`Ctx::build`], adding to `work` one step per member, text, candidate, drop and hit:
    /// linear in the version's own members (and their hits), whatever versions came before.
    pub(crate) fn build_counted(&self, work: &mut u64) -> Result<Built, PlanError> {
        let budget = Budget::new(self.budget)?;
        let meter = self.meter;
        let mut candidates = Vec::new();
        // For each candidate (by rank - 1): its member's index and artifact.
        let mut owners: Vec<(usize, Option<String>)> = Vec::new();
        let mut extra_drops = Vec::new();
        let mut notices = Vec::new();
        let mut redactions: BTreeMap<String, u64> = BTreeMap::new();
        let excluded: HashSet<&str> = self.exclude.iter().map(String::as_str).collect();
        *work += self.exclude.len() as u64;
        // Priority order: the pinned tier first, then declared order. Ranks follow it, so a
        // citation offered by a pinned and a visible member is kept as the pinned one.
        let order: Vec<usize> = [Tier::Pinned, Tier::Visible]
            .into_iter()
            .flat_map(|tier| {
                (0..self.members.len()).filter(move |&i| self.members[i].member.tier == tier)
            })
            .collect();
        // Each member's place in that order, and what it left out, by place: the members'
        // records come out in priority order, each member's in rank order, with no sort.
        let mut left_out: Vec<Vec<Shrunk>> = vec![Vec::new(); order.len()];
        let mut place = vec![0; order.len()];
        for (at, &index) in order.iter().enumerate() {
            place[index] = at;
        }
        *work += 2 * order.len() as u64;
        for (at, &index) in order.iter().enumerate() {
            let shared = &self.members[index];
            let member = &shared.member;
            let citation = self.citation_of(&member.name);
            let family = Family(citation.0.clone());
            let mut member_candidates = Vec::new();
            *work += 1;
            if let (Binding::Bound(value), Some(prepared)) =
                (&member.binding, shared.prepared(work))
            {
                add_counts(&mut redactions, prepared.redactions.clone());
                let sizes = prepared.sizes(meter, work);
                let texts = prepared.texts.iter().zip(sizes.iter());
                match value {
                    Value::Text(text) => {
                        for (masked, &cost) in texts {
                            member_candidates.push((
                                Candidate {
                                    citation: citation.clone(),
                                    family: family.clone(),
                                    cost,
                                    text: masked.clone(),
                                    tier: member.tier,
                                    score: None,
                                    location: text.location.clone(),
                                    title: text.title.clone(),
                                },
                                text.artifact.clone(),
                            ));
                        }
                    }
                    Value::Hits(hits) => {
                        for (hit, (masked, &cost)) in hits.iter().zip(texts) {
                            member_candidates.push((
                                Candidate {
                                    citation: hit.citation.clone(),
                                    family: hit.family.clone(),
                                    cost,
                                    text: masked.clone(),
                                    tier: member.tier,
                                    score: hit.score,
                                    location: hit.location.clone(),
                                    title: hit.title.clone(),
                                },
                                hit.artifact.clone(),
                            ));
                        }
                    }
                }
                *work += member_candidates.len() as u64;
            }
            let (reason, detail, size) = if excluded.contains(member.name.as_str()) {
                let size = member_candidates.iter().map(|(c, _)| c.cost).sum();
                (DropReason::Excluded, None, size)
            } else if let Binding::Unbound(why) = &member.binding {
                notices.push(Warning::Notice(format!(
                    "member `{}` of `{}` is unbound and contributes nothing: {why}",
                    member.name, self.name
                )));
                (DropReason::Unbound, Some(why.clone()), 0)
            } else {
                for (candidate, artifact) in member_candidates {
                    owners.push((index, artifact));
                    candidates.push(candidate);
                }
                continue;
            };
            left_out[at].push(Shrunk {
                member: member.name.clone(),
                citation: citation.clone(),
                size,
                remaining: None,
                reason,
                detail,
            });
            extra_drops.push(Dropped {
                rank: None,
                citation,
                family,
                cost: size,
                reason,
                remaining: None,
            });
        }
        // The core's drop-and-continue selection: one step per candidate.
        *work += candidates.len() as u64;
        let mut pack = Pack::build(
            PackRequest {
                goal: self.purpose.clone(),
                budget,
                meter,
                selector: Selector::Skip,
            },
            candidates,
        );
        for d in &pack.dropped {
            let Some(rank) = d.rank else { continue };
            let index = owners[rank - 1].0;
            left_out[place[index]].push(Shrunk {
                member: self.members[index].member.name.clone(),
                citation: d.citation.clone(),
                size: d.cost,
                remaining: d.remaining,
                reason: d.reason,
                detail: None,
            });
        }
        *work += pack.dropped.len() as u64 + pack.hits.len() as u64;
        pack.dropped.extend(extra_drops);
        pack.warnings.extend(notices);
        let mut masked = ctxpack_core::RedactionSummary::default();
        for (kind, n) in redactions {
            masked.add(&kind, n);
        }
        pack.set_redactions(masked);
        let mut artifacts: Vec<String> = pack
            .hits
            .iter()
            .filter_map(|h| owners[h.rank - 1].1.clone())
            .collect();
        artifacts.sort();
        artifacts.dedup();
        pack.artifacts = artifacts;
        Ok(Built {
            pack,
            shrunk: left_out.into_iter().flatten().collect(),
        })
    }
}

fn add_counts(total: &mut BTreeMap<String, u64>, found: BTreeMap<String, u64>) {
    for (kind, n) in found {
        *total.entry(kind).or_default() += n;
    }
}
