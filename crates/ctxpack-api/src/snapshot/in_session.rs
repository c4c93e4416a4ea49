//! A pack in a session: the request checked, the session opened for it, each hit marked as
//! shown before (whole, in part, or not), what the pack showed remembered, and references
//! recalled as text again (see [`crate::session`]).

use std::collections::HashMap;

use ctxpack_core::{Candidate, Citation, Family, Location, Meter, Pack, Seen, short_pack_id};
use ctxpack_store::session::now_secs;
use ctxpack_store::{SessionKey, ShownRange};

use super::{SnapshotPackRequest, Source};
use crate::error::{Error, Result};
use crate::session::{MAX_RECALL, MAX_SESSION_ID_CHARS, Sessions};
use crate::workspace::Workspace;

/// Checks the session fields of `request`: an id of 1 to [`MAX_SESSION_ID_CHARS`] printable
/// characters, and `fresh` or `recall` only with one.
pub(crate) fn check_request(request: &SnapshotPackRequest) -> Result<()> {
    let bad_id = |id: &String| {
        id.is_empty()
            || id.chars().count() > MAX_SESSION_ID_CHARS
            || id.chars().any(char::is_control)
    };
    if request.session.as_ref().is_some_and(bad_id) {
        return Err(Error::invalid_field(
            "session",
            format!("a session id is 1 to {MAX_SESSION_ID_CHARS} printable characters"),
        ));
    }
    if request.session.is_none() && request.fresh {
        return Err(Error::invalid_field(
            "fresh",
            "applies to a session: name the session too",
        ));
    }
    if request.session.is_none() && !request.recall.is_empty() {
        return Err(Error::invalid_field(
            "recall",
            "recalls what a session was shown: name the session too",
        ));
    }
    if request.recall.len() > MAX_RECALL {
        return Err(Error::invalid_field(
            "recall",
            format!(
                "{} items; recall at most {MAX_RECALL} at a time",
                request.recall.len()
            ),
        ));
    }
    if let Some(item) = request
        .recall
        .iter()
        .find(|r| r.trim().is_empty() || r.len() > 4096)
    {
        return Err(Error::invalid_field(
            "recall",
            format!(
                "`{}` is not a citation or a pack id",
                item.chars().take(80).collect::<String>()
            ),
        ));
    }
    Ok(())
}

/// A session as one pack uses it: what it was shown before the pack.
pub(crate) struct Open {
    sessions: Sessions,
    key: SessionKey,
    shown: Vec<ShownRange>,
    fresh: bool,
}

impl Workspace {
    /// The session `request` names, with what it was shown; `None` when it names none.
    pub(crate) fn open_session(&self, request: &SnapshotPackRequest) -> Result<Option<Open>> {
        let Some(id) = &request.session else {
            return Ok(None);
        };
        let sessions = self.sessions()?;
        let key = SessionKey {
            owner: sessions.owner.clone(),
            id: id.clone(),
        };
        let shown = sessions.store.shown(&key, now_secs())?;
        Ok(Some(Open {
            sessions,
            key,
            shown,
            fresh: request.fresh,
        }))
    }
}

impl Open {
    /// The session's id.
    pub(crate) fn id(&self) -> &str {
        &self.key.id
    }

    /// Makes each candidate whose lines the session was shown a reference, and cuts each
    /// candidate some of whose lines it was shown to the longest run of new ones. A cut
    /// candidate is not shown whole again later (its entry in `uncut` is emptied) when the
    /// rest of its chunk holds lines shown before, and a glimpse of a line shown before is
    /// left out. Returns what was seen of each, by its citation now. A fresh pack marks
    /// nothing; a pack that never cuts a hit (`cut` off: `context pack`'s contract) makes
    /// references only.
    pub(crate) fn mark(
        &self,
        candidates: &mut [Candidate],
        uncut: &mut [Option<(Citation, Candidate)>],
        glimpses: &mut Vec<(usize, Candidate)>,
        meter: Meter,
        sha: &str,
        cut: bool,
    ) -> HashMap<Citation, Seen> {
        let mut seen = HashMap::new();
        if self.fresh || self.shown.is_empty() {
            return seen;
        }
        let mut by_path: HashMap<&str, Vec<&ShownRange>> = HashMap::new();
        // Newest first: a reference names the latest pack that showed the lines.
        for range in self.shown.iter().rev() {
            by_path.entry(range.path.as_str()).or_default().push(range);
        }
        let before = |candidate: &Candidate| before(&by_path, candidate);
        glimpses.retain(|(_, g)| before(g).is_none_or(|b| b.iter().all(Option::is_none)));
        for (i, candidate) in candidates.iter_mut().enumerate() {
            if let Some(slot) = uncut.get_mut(i)
                && slot
                    .as_ref()
                    .and_then(|(_, whole)| before(whole))
                    .is_some_and(|b| b.iter().any(Option::is_some))
            {
                *slot = None;
            }
            let Some(before) = before(candidate) else {
                continue;
            };
            let Some(first) = before.iter().flatten().next().copied() else {
                continue;
            };
            let (Some(source), Some(location)) =
                (Source::of(candidate, sha), candidate.location.clone())
            else {
                continue;
            };
            let (start, len) = longest_new_run(&before);
            if len > 0 && !cut {
                continue;
            }
            let was = candidate.cost;
            let shown = if len == 0 {
                // Every line was shown: a reference, named after the range that showed most.
                let most = most_shown(&before).unwrap_or(first);
                candidate.text = format!("shown before in pack {}", short_pack_id(&most.pack));
                candidate.cost = meter.count(&candidate.text);
                Seen {
                    pack: most.pack.clone(),
                    citation: Citation(most.citation.clone()),
                    whole: true,
                    saved: was.saturating_sub(candidate.cost),
                }
            } else {
                let text: String = candidate
                    .text
                    .split_inclusive('\n')
                    .skip(start)
                    .take(len)
                    .collect();
                let first_line = location.start_line + start as u32;
                let last_line = first_line + len as u32 - 1;
                candidate.citation = source.cite(&location.path, first_line, last_line);
                candidate.cost = meter.count(&text);
                candidate.text = text;
                candidate.location = Some(Location {
                    start_line: first_line,
                    end_line: last_line,
                    ..location
                });
                Seen {
                    pack: first.pack.clone(),
                    citation: Citation(first.citation.clone()),
                    whole: false,
                    saved: was.saturating_sub(candidate.cost),
                }
            };
            if let Some(slot) = uncut.get_mut(i) {
                *slot = None;
            }
            seen.insert(candidate.citation.clone(), shown);
        }
        seen
    }

    /// Remembers what `pack` (recorded as `id`) showed: each hit that is not a reference.
    pub(crate) fn remember(&self, pack: &Pack, id: &str) -> Result<()> {
        let ranges = pack
            .hits
            .iter()
            .filter(|h| !h.seen.as_ref().is_some_and(|s| s.whole))
            .filter_map(|h| {
                let l = h.candidate.location.as_ref()?;
                Some(ShownRange {
                    pack: id.to_owned(),
                    citation: h.candidate.citation.0.clone(),
                    path: l.path.clone(),
                    start_line: l.start_line,
                    end_line: l.end_line,
                    text: h.candidate.text.clone(),
                })
            })
            .collect();
        self.sessions
            .store
            .add(&self.key, ranges, now_secs())
            .map_err(Error::from)
    }

    /// The candidates behind `items` (citations, or pack ids or unique prefixes of at least
    /// four hex digits), each range once, in the order asked, costs in `meter`.
    pub(crate) fn recall(&self, items: &[String], meter: Meter) -> Result<Vec<Candidate>> {
        let mut out: Vec<Candidate> = Vec::new();
        for item in items {
            let item = item.trim();
            let prefix = item.to_ascii_lowercase();
            let is_id = item.len() >= 4 && item.bytes().all(|b| b.is_ascii_hexdigit());
            let found: Vec<&ShownRange> = self
                .shown
                .iter()
                .filter(|r| r.citation == item || (is_id && r.pack.starts_with(&prefix)))
                .collect();
            if found.is_empty() {
                return Err(Error::not_found(format!(
                    "session `{}` was shown no range cited `{item}` and no pack with that id (sessions forget what was shown after {} hours without a pack)",
                    self.key.id,
                    self.sessions.store.limits().idle_secs / 3600
                )));
            }
            let packs: std::collections::BTreeSet<&str> = found
                .iter()
                .filter(|r| r.citation != item)
                .map(|r| r.pack.as_str())
                .collect();
            if packs.len() > 1 {
                return Err(Error::invalid_field(
                    "recall",
                    format!(
                        "`{item}` names {} packs of the session; give more of the id",
                        packs.len()
                    ),
                ));
            }
            for range in found {
                if out.iter().any(|c| c.citation.0 == range.citation) {
                    continue;
                }
                let citation = Citation(range.citation.clone());
                out.push(Candidate {
                    family: Family::from_citation(&citation),
                    citation,
                    cost: meter.count(&range.text),
                    text: range.text.clone(),
                    tier: ctxpack_core::Tier::Visible,
                    score: None,
                    location: Some(Location {
                        path: range.path.clone(),
                        start_line: range.start_line,
                        end_line: range.end_line,
                        symbol: None,
                    }),
                    title: None,
                });
            }
        }
        Ok(out)
    }
}

/// For each line of `candidate`, a range of `by_path` that showed it (the same path, line
/// number and text), newest first; `None` when the candidate is not a file's lines or its
/// file was shown nothing.
fn before<'a>(
    by_path: &HashMap<&str, Vec<&'a ShownRange>>,
    candidate: &Candidate,
) -> Option<Vec<Option<&'a ShownRange>>> {
    let location = candidate.location.as_ref()?;
    let ranges = by_path.get(location.path.as_str())?;
    let lines: Vec<&str> = candidate.text.split_inclusive('\n').collect();
    if lines.len() as u64 != u64::from(location.end_line.checked_sub(location.start_line)?) + 1 {
        return None;
    }
    Some(
        lines
            .iter()
            .enumerate()
            .map(|(n, line)| {
                let number = location.start_line + n as u32;
                ranges
                    .iter()
                    .find(|r| shown_line(r, number) == Some(strip(line)))
                    .copied()
            })
            .collect(),
    )
}

/// `line` without its line ending.
fn strip(line: &str) -> &str {
    line.trim_end_matches(['\n', '\r'])
}

/// The text `range` showed at line `number`, if it showed that line.
fn shown_line(range: &ShownRange, number: u32) -> Option<&str> {
    if number < range.start_line || number > range.end_line {
        return None;
    }
    range
        .text
        .split_inclusive('\n')
        .nth((number - range.start_line) as usize)
        .map(strip)
}

/// The longest run of lines not shown before: its first index and length (0 when every line
/// was shown). The first of equally long runs.
fn longest_new_run(before: &[Option<&ShownRange>]) -> (usize, usize) {
    let (mut best, mut at) = ((0, 0), None);
    for (i, b) in before.iter().enumerate() {
        match (b, at) {
            (None, None) => at = Some(i),
            (Some(_), Some(start)) => {
                if i - start > best.1 {
                    best = (start, i - start);
                }
                at = None;
            }
            _ => {}
        }
    }
    if let Some(start) = at
        && before.len() - start > best.1
    {
        best = (start, before.len() - start);
    }
    best
}

/// The range that showed most of the lines.
fn most_shown<'a>(before: &[Option<&'a ShownRange>]) -> Option<&'a ShownRange> {
    let mut counts: Vec<(&ShownRange, usize)> = Vec::new();
    for range in before.iter().flatten() {
        match counts.iter_mut().find(|(r, _)| std::ptr::eq(*r, *range)) {
            Some((_, n)) => *n += 1,
            None => counts.push((range, 1)),
        }
    }
    // The first of the most, in line order.
    let max = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == max).map(|(r, _)| r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_new_run_is_found_wherever_it_lies() {
        let r = ShownRange {
            pack: "p".into(),
            citation: "c".into(),
            path: "a".into(),
            start_line: 1,
            end_line: 1,
            text: String::new(),
        };
        let s = Some(&r);
        assert_eq!(longest_new_run(&[s, s]), (0, 0));
        assert_eq!(longest_new_run(&[None, None, s]), (0, 2));
        assert_eq!(longest_new_run(&[s, None, s, None, None]), (3, 2));
        assert_eq!(longest_new_run(&[None, s, None]), (0, 1));
    }
}
