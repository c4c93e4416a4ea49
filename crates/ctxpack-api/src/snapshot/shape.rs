//! What a pack shows of each candidate: a cut to its lines around the goal's matches, a line
//! for a further file (a glimpse), the whole chunk again with budget left (depth), and weak
//! candidates left out with their reason.

use aho_corasick::AhoCorasick;

use super::*;

/// Budget units per line a candidate may show: a chunk is cut to `budget / BUDGET_PER_LINE`
/// of its lines (at least [`MIN_CUT_LINES`]), so a pack shows the matching part of more chunks
/// instead of the whole of a few. Chunks are at most 60 lines long, so from a budget of 12,000
/// nothing is cut.
pub(super) const BUDGET_PER_LINE: u64 = 200;
/// The fewest lines a cut candidate keeps.
pub(super) const MIN_CUT_LINES: u64 = 10;

/// How many lines a candidate of a pack with `budget` may show.
pub(super) fn cut_lines(budget: Budget) -> usize {
    usize::try_from((budget.get() / BUDGET_PER_LINE).max(MIN_CUT_LINES)).unwrap_or(usize::MAX)
}

/// The share of a pack's budget (1 / n) that its best-ranked candidates may take whole: they
/// are never cut while together they cost at most this share. The chunk the evidence points
/// at most holds the lines a task changes more often than another chunk's matching lines do
/// (docs/quality.md, "The best chunks whole").
pub(super) const WHOLE_SHARE: u64 = 2;

/// How many candidates of these `costs` (best first) a pack with `budget` shows whole: the
/// longest run from the first whose costs together fit [`WHOLE_SHARE`] of the budget.
pub(super) fn shown_whole(costs: impl IntoIterator<Item = u64>, budget: Budget) -> usize {
    let share = budget.get() / WHOLE_SHARE;
    let mut spent = 0u64;
    costs
        .into_iter()
        .take_while(|&cost| {
            spent = spent.saturating_add(cost);
            spent <= share
        })
        .count()
}

/// The goal's terms (as the index analyses text), each weighted by how rare it is among the
/// texts of a retrieval's candidates: a term most candidates hold ("add", "config") says little
/// about which of a chunk's lines matter.
pub(super) struct GoalTerms {
    /// Each term's position in `weights`.
    index: HashMap<String, usize>,
    weights: Vec<f64>,
    /// Per term, text that any line holding it contains once lowercased: the term itself, or
    /// for a term stemmed from `-ies` to `-y`, the term without its `y`. Finding none in a
    /// line is enough to know it holds no term, without analysing it.
    roots: Vec<String>,
    /// Finds every root in one pass over a text, ASCII letters in either case; `None` when
    /// there is no root to find.
    finder: Option<AhoCorasick>,
}

impl GoalTerms {
    pub(super) fn new(goal: &str, texts: &[&str]) -> GoalTerms {
        let terms = QueryTerms::from_goal(goal).0;
        let roots: Vec<String> = terms
            .iter()
            .map(|t| match t.strip_suffix('y') {
                Some(root) if !root.is_empty() => root.to_owned(),
                _ => t.clone(),
            })
            .collect();
        // How many texts may hold each term (its root in their lowercased text): a weight
        // needs the proportion, not an exact count, and a pack must not analyse every text.
        let mut holding = vec![0usize; terms.len()];
        for text in texts {
            let lower = text.to_lowercase();
            for (n, root) in holding.iter_mut().zip(&roots) {
                *n += usize::from(lower.contains(root.as_str()));
            }
        }
        let all = texts.len() as f64;
        let weights = holding
            .into_iter()
            .map(|n| (1.0 + (1.0 + all) / (1.0 + n as f64)).ln())
            .collect();
        let index = terms.into_iter().enumerate().map(|(i, t)| (t, i)).collect();
        // Roots are analysed terms: never empty, and an automaton that cannot be built (it
        // would only be for its size) leaves every line to be analysed.
        let finder = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(roots.iter().filter(|r| !r.is_empty()))
            .ok()
            .filter(|_| !roots.is_empty());
        GoalTerms {
            index,
            weights,
            roots,
            finder,
        }
    }

    /// Which lines of `text` (0-based, ascending) hold some term's root once lowercased. An
    /// ASCII text is searched as it is, letters in either case, which finds what searching its
    /// lowercased copy would; any other is lowercased first (lowercasing never adds or removes
    /// a line break, so its lines are the text's). A root never holds a line break, so a line
    /// holding one holds a match that starts in it.
    fn lines_with_roots(&self, text: &str) -> Vec<usize> {
        let Some(finder) = &self.finder else {
            return if self.roots.is_empty() {
                Vec::new()
            } else {
                (0..ctxpack_meter::line_count(text)).collect()
            };
        };
        let lower;
        let searched = if text.is_ascii() {
            text
        } else {
            lower = text.to_lowercase();
            lower.as_str()
        };
        let bytes = searched.as_bytes();
        let mut lines = Vec::new();
        let (mut line, mut counted) = (0usize, 0usize);
        for found in finder.find_iter(searched) {
            line += line_breaks(&bytes[counted..found.start()]);
            counted = found.start();
            if lines.last() != Some(&line) {
                lines.push(line);
            }
        }
        lines
    }

    /// The weight of the distinct goal terms on each line of `text`. Only a line holding some
    /// term's root is analysed.
    fn lines(&self, text: &str) -> Vec<f64> {
        let mut weights = vec![0.0; ctxpack_meter::line_count(text)];
        let holding = self.lines_with_roots(text);
        if holding.is_empty() {
            return weights;
        }
        let mut reader = TermReader::default();
        let mut seen = vec![false; self.weights.len()];
        let mut wanted = holding.into_iter().peekable();
        for (n, line) in text.split_inclusive('\n').enumerate() {
            let Some(&next) = wanted.peek() else { break };
            if n != next {
                continue;
            }
            wanted.next();
            seen.fill(false);
            let mut weight = 0.0;
            for term in reader.terms(line) {
                if let Some(&i) = self.index.get(term)
                    && !std::mem::replace(&mut seen[i], true)
                {
                    weight += self.weights[i];
                }
            }
            weights[n] = weight;
        }
        weights
    }
}

/// The line breaks in `bytes`.
fn line_breaks(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// The first line (0-based) and length of the run of `lines` lines of `text` to show: the
/// run whose lines hold the most goal-term weight, centred on its matches (the chunk's start
/// when a run from there holds as much, so its signature stays in view); the first lines
/// when no line matches.
pub(super) fn matching_run(text: &str, lines: usize, terms: &GoalTerms) -> (usize, usize) {
    let weights = terms.lines(text);
    if weights.len() <= lines {
        return (0, weights.len());
    }
    let sums: Vec<f64> = weights
        .windows(lines)
        .map(|w| w.iter().sum::<f64>())
        .collect();
    let best = sums.iter().copied().fold(0.0, f64::max);
    if best <= 0.0 {
        return (0, lines);
    }
    // Runs of equal weight differ only in unmatched lines at their ends: compare with a
    // tolerance, since sums of the same weights in another order may differ in the last bit.
    let equal = |v: f64| (best - v).abs() <= best * 1e-9;
    let first = sums.iter().position(|&v| equal(v)).unwrap_or(0);
    let last = first
        + sums[first..]
            .iter()
            .take_while(|&&v| equal(v))
            .count()
            .saturating_sub(1);
    let start = if first == 0 { 0 } else { (first + last) / 2 };
    (start, lines)
}

/// Cuts a file's candidate (a snapshot's or the working tree's) to `lines` of its lines around
/// the goal's matches ([`matching_run`]): its citation then names exactly the lines it shows,
/// and its cost is that of those lines (from the `o200k` counts stored with its text, where
/// they tell it, else counted again). Returns the candidate as it was when it was cut.
/// Artifacts are left whole.
pub(super) fn cut_to_matches(
    candidate: &mut Candidate,
    lines: usize,
    terms: &GoalTerms,
    meter: Meter,
    sha: &str,
    o200k_lines: Option<&LineCounts>,
) -> Option<Candidate> {
    let source = Source::of(candidate, sha)?;
    if ctxpack_meter::line_count(&candidate.text) <= lines {
        return None;
    }
    let (first, count) = matching_run(&candidate.text, lines, terms);
    // A candidate `Source::of` knows has a location; the lines it will cite.
    let start = candidate.location.as_ref()?.start_line + first as u32;
    let end = start + count as u32 - 1;
    let text: String = candidate
        .text
        .split_inclusive('\n')
        .skip(first)
        .take(count)
        .collect();
    // The whole text moves to the copy kept as it was, rather than being copied and freed:
    // candidates are shaped on other threads than the one that read them, and a block freed
    // on another thread than its own waits for its allocator's lock, which that thread holds
    // whenever it allocates (docs/performance.md).
    let whole = std::mem::replace(&mut candidate.text, text);
    let mut uncut = candidate.clone();
    uncut.text = whole;
    if let Some(location) = candidate.location.as_mut() {
        (location.start_line, location.end_line) = (start, end);
        candidate.citation = source.cite(&location.path, start, end);
    }
    candidate.cost = lines_cost(&candidate.text, first, meter, o200k_lines);
    Some(uncut)
}

/// The cost in `meter` of `text`, lines of a chunk from its line `first` (0-based): from the
/// chunk's stored `o200k` counts ([`Meter::count_run`]), else counted.
fn lines_cost(text: &str, first: usize, meter: Meter, o200k_lines: Option<&LineCounts>) -> u64 {
    match o200k_lines {
        Some(counts) if meter == Meter::O200k => meter.count_run(text, first, counts),
        _ => meter.count(text),
    }
}

/// Where a file candidate cited whole comes from: the snapshot's commit, or the working tree
/// (a `--worktree` pack's edited files, cut and glimpsed exactly like committed ones).
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    Commit(&'a str),
    Worktree,
}

impl<'a> Source<'a> {
    /// The source of `candidate` when it is a file's lines cited by exactly its location (a
    /// chunk, whole or cut; not an artifact), in snapshot `sha` or the working tree over it.
    pub(crate) fn of(candidate: &Candidate, sha: &'a str) -> Option<Source<'a>> {
        let l = candidate.location.as_ref()?;
        [Source::Commit(sha), Source::Worktree]
            .into_iter()
            .find(|s| candidate.citation == s.cite(&l.path, l.start_line, l.end_line))
    }

    /// The citation of lines `start..=end` of `path` here.
    pub(crate) fn cite(self, path: &str, start: u32, end: u32) -> Citation {
        match self {
            Source::Commit(sha) => Citation::code(path, start, end, sha),
            Source::Worktree => Citation::worktree(path, start, end),
        }
    }
}

/// Shows cut hits whole again, best-ranked first, while what selection and the glimpses left
/// of the budget (`left`, as `fit` counts it) pays for the rest of each chunk: a pack whose
/// candidates ran out before its budget gives its strong chunks depth instead of leaving the
/// budget unspent. `uncut` holds, by rank, each cut candidate's citation and the candidate as
/// it was; a glimpse, cited by another line, is never widened.
pub(super) fn deepen(
    pack: &mut Pack,
    mut uncut: Vec<Option<(Citation, Candidate)>>,
    mut left: u64,
    fit: &Fit,
) {
    let meter = pack.meter;
    let mut order: Vec<usize> = (0..pack.hits.len()).collect();
    order.sort_by_key(|&i| pack.hits[i].rank);
    for i in order {
        let hit = &mut pack.hits[i];
        let Some(slot) = uncut.get_mut(hit.rank.wrapping_sub(1)) else {
            continue;
        };
        let Some((cut, whole)) = slot.as_ref() else {
            continue;
        };
        if *cut != hit.candidate.citation {
            continue;
        }
        let extra = fit
            .cost(whole, meter)
            .saturating_sub(fit.cost(&hit.candidate, meter));
        if extra > left {
            continue;
        }
        let Some((_, whole)) = slot.take() else {
            continue;
        };
        left -= extra;
        pack.used = pack.used - hit.candidate.cost + whole.cost;
        hit.candidate = whole;
    }
}

/// A retrieved candidate made ready for selection.
pub(super) struct Shaped {
    /// Masked with today's rules and, when the goal's terms are given, cut around them.
    pub(super) candidate: Candidate,
    /// The secrets masked in it, when indexed and now.
    pub(super) redactions: RedactionSummary,
    /// The artifact it belongs to, if it is one.
    pub(super) artifact: Option<String>,
    /// Its line for a further file.
    pub(super) glimpse: Option<Candidate>,
    /// When it was cut: its citation now, and the candidate as it was.
    pub(super) uncut: Option<(Citation, Candidate)>,
}

/// Fewer candidates than this are shaped on the calling thread: a thread costs more.
pub(super) const SHAPED_PER_THREAD: usize = 64;

/// Candidates a thread takes at a time from those left to shape.
const SHAPED_PER_BATCH: usize = 16;

/// Shapes `retrieved` ([`Shaped`]), in order, on every core: masking and cutting are most of a
/// large pack's own work, and each candidate's is independent of the others'. With `terms`
/// (a focused pack) each candidate is glimpsed and, past the first `whole`, cut to `lines`
/// around them.
pub(super) fn shape_all(
    retrieved: Vec<Retrieved>,
    terms: Option<&GoalTerms>,
    lines: usize,
    whole: usize,
    meter: Meter,
    sha: &str,
) -> Vec<Shaped> {
    let shape = |(i, r): (usize, Retrieved)| {
        let mut redactions = RedactionSummary::default();
        for (kind, n) in &r.redactions {
            redactions.add(kind, *n);
        }
        let mut candidate = r.candidate;
        // Stored text was masked by the rules of its day: mask with today's, unless those were
        // today's (an eighth of a large pack's time went to masking text again for nothing).
        if r.masked_by_current_rules {
            mask::title(&mut candidate, &mut redactions);
        } else {
            mask::candidate(&mut candidate, meter, &mut redactions);
        }
        let (glimpse, uncut) = match terms {
            Some(terms) => {
                let counts = r.o200k_lines.as_ref();
                let glimpse = glimpse(&candidate, meter, sha, counts);
                let uncut = (i >= whole)
                    .then(|| cut_to_matches(&mut candidate, lines, terms, meter, sha, counts))
                    .flatten()
                    .map(|before| (candidate.citation.clone(), before));
                (glimpse, uncut)
            }
            None => (None, None),
        };
        Shaped {
            candidate,
            redactions,
            artifact: r.artifact,
            glimpse,
            uncut,
        }
    };
    let threads = crate::cores::available();
    let per_thread = retrieved.len().div_ceil(threads).max(SHAPED_PER_THREAD);
    if retrieved.len() <= per_thread {
        return retrieved.into_iter().enumerate().map(shape).collect();
    }
    // Small batches taken in turn by whichever thread is free: the other cores may still be
    // busy (the working tree's status runs beside ranking), and the calling thread then shapes
    // more of them instead of waiting. Each candidate's shape is its own, so the result is the
    // same whoever shapes it.
    let mut batches: Vec<Vec<(usize, Retrieved)>> = Vec::new();
    let mut rest = retrieved.into_iter().enumerate();
    loop {
        let batch: Vec<(usize, Retrieved)> = rest.by_ref().take(SHAPED_PER_BATCH).collect();
        if batch.is_empty() {
            break;
        }
        batches.push(batch);
    }
    batches.reverse();
    // No more threads than batches: a large machine would start threads for nothing.
    let workers = threads.min(batches.len());
    let queue = std::sync::Mutex::new(batches);
    let work = || {
        let mut shaped: Vec<(usize, Shaped)> = Vec::new();
        loop {
            // A thread that panicked while holding the queue left it whole: take it as it is.
            let batch = queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .pop();
            let Some(batch) = batch else {
                return shaped;
            };
            shaped.extend(batch.into_iter().map(|(i, r)| (i, shape((i, r)))));
        }
    };
    let mut shaped = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..workers)
            .map(|_| crate::cores::spawn_beside(scope, work))
            .collect();
        let mut shaped = work();
        for handle in handles {
            shaped.extend(
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        shaped
    });
    shaped.sort_unstable_by_key(|(i, _)| *i);
    shaped.into_iter().map(|(_, s)| s).collect()
}

/// A candidate scoring under this fraction (1 / n) of the best, with no evidence from the
/// repository's history or imports, is weak: far weaker evidence than the pack holds. On the
/// nine measured repositories a fifth of the files a pool reaches score under a fifth of the
/// best, and 2 of the 461 files their tasks changed (docs/quality.md).
pub(super) const WEAK_SHARE: f32 = 5.0;

/// Takes the weak candidates out of `retrieved` (best first), keeping the order of both: those
/// scoring under [`WEAK_SHARE`] of the first with no past commit message, co-change or import
/// behind their file. Nothing is weak when the best score is not a positive number.
pub(super) fn split_weak(retrieved: &mut Vec<Retrieved>) -> Vec<Retrieved> {
    let Some(best) = retrieved.first().map(|r| r.score) else {
        return Vec::new();
    };
    if !(best.is_finite() && best > 0.0) {
        return Vec::new();
    }
    let floor = best / WEAK_SHARE;
    let weak = |r: &Retrieved| {
        let b = &r.breakdown;
        r.score < floor && b.history <= 0.0 && b.cochange <= 0.0 && b.imported <= 0.0
    };
    let (out, kept): (Vec<Retrieved>, Vec<Retrieved>) =
        std::mem::take(retrieved).into_iter().partition(weak);
    *retrieved = kept;
    out
}

/// Records each weak candidate as a candidate offered and dropped as
/// [weak](DropReason::Weak), ranked after the `offered` ones, so a pack accounts for every
/// candidate retrieved.
pub(super) fn leave_out_weak(pack: &mut Pack, weak: Vec<Retrieved>, offered: usize) {
    let n = weak.len();
    pack.dropped
        .extend(weak.into_iter().enumerate().map(|(i, r)| Dropped {
            rank: Some(offered + i + 1),
            citation: r.candidate.citation,
            family: r.candidate.family,
            cost: r.candidate.cost,
            reason: DropReason::Weak,
            remaining: None,
        }));
    pack.counters.candidate_hits += n;
    pack.counters.unique_citations += n;
    pack.counters.budget_rejected_hits += n;
}

/// The share of a pack's budget (1 / n) that the first selection leaves for glimpses of
/// further files: a line each says where else to look for a fraction of a chunk's cost.
pub(super) const GLIMPSE_SHARE: u64 = 10;

/// A line of a file's candidate that says where else to look: the signature of the definition
/// its chunk is named after ([`glimpse_line`]), cited by that line alone. Its cost is read from
/// the `o200k` counts stored with the chunk's text where they tell it, else counted.
pub(super) fn glimpse(
    candidate: &Candidate,
    meter: Meter,
    sha: &str,
    o200k_lines: Option<&LineCounts>,
) -> Option<Candidate> {
    let source = Source::of(candidate, sha)?;
    let location = candidate.location.as_ref()?;
    if location.end_line <= location.start_line {
        return None;
    }
    let (n, text) = glimpse_line(&candidate.text, location.symbol.as_deref())?;
    let line = location.start_line + n as u32;
    Some(Candidate {
        citation: source.cite(&location.path, line, line),
        family: candidate.family.clone(),
        text: text.to_owned(),
        cost: lines_cost(text, n, meter, o200k_lines),
        tier: candidate.tier,
        score: candidate.score,
        location: Some(Location {
            start_line: line,
            end_line: line,
            ..location.clone()
        }),
        title: candidate.title.clone(),
    })
}

/// How far into a chunk its definition's signature is looked for: past attributes, decorators
/// and a doc comment.
pub(super) const SIGNATURE_LOOKAHEAD: usize = 20;

/// The line (0-based, and its text) a glimpse of a chunk shows: among its first
/// [`SIGNATURE_LOOKAHEAD`] lines, the first that names `symbol` (its last part, as a whole
/// word) and is not a comment — the definition's signature or heading, not `#[test]` or a doc
/// comment; else the first line that is not blank.
pub(super) fn glimpse_line<'t>(text: &'t str, symbol: Option<&str>) -> Option<(usize, &'t str)> {
    let name = symbol
        .and_then(|s| s.rsplit(['.', ':']).next())
        .filter(|n| !n.is_empty());
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let names = |line: &str, name: &str| {
        let trimmed = line.trim_start();
        !["//", "/*", "*", "--"]
            .iter()
            .any(|c| trimmed.starts_with(c))
            && line.match_indices(name).any(|(at, _)| {
                !line[..at].chars().next_back().is_some_and(word)
                    && !line[at + name.len()..].chars().next().is_some_and(word)
            })
    };
    let mut lines = text.split_inclusive('\n').enumerate();
    name.and_then(|name| {
        lines
            .clone()
            .take(SIGNATURE_LOOKAHEAD)
            .find(|(_, line)| names(line, name))
    })
    .or_else(|| lines.find(|(_, line)| !line.trim().is_empty()))
}

/// Adds a glimpse ([`glimpse`]) of each file the pack does not show yet, best-ranked first,
/// while one fits `left` (as `fit` counts it) and, when the output's share around its evidence
/// is held, what its markup adds fits `around` ([`Fit::hold_around`]), after the selected hits
/// (whose order is the selector's). Each is a hit like any other, counted as a candidate
/// offered and selected; the candidate it was taken from stays among the dropped. Returns
/// what is left of `left`.
pub(super) fn add_glimpses(
    pack: &mut Pack,
    glimpses: Vec<(usize, Candidate)>,
    left: u64,
    fit: &Fit,
    mut around: Option<u64>,
) -> u64 {
    let mut shown: HashSet<Family> = pack
        .hits
        .iter()
        .map(|h| h.candidate.family.clone())
        .collect();
    let cited: HashSet<Citation> = pack
        .hits
        .iter()
        .map(|h| h.candidate.citation.clone())
        .collect();
    let mut left = left;
    let mut added = 0;
    for (rank, candidate) in glimpses {
        if shown.contains(&candidate.family) || cited.contains(&candidate.citation) {
            continue;
        }
        let cost = fit.cost(&candidate, pack.meter);
        let framing = fit.framing(&candidate, pack.meter);
        if cost > left || around.is_some_and(|a| framing > a) {
            continue;
        }
        left -= cost;
        around = around.map(|a| a - framing);
        added += 1;
        shown.insert(candidate.family.clone());
        pack.used += candidate.cost;
        pack.hits.push(Hit {
            rank,
            candidate,
            seen: None,
        });
    }
    pack.counters.candidate_hits += added;
    pack.counters.unique_citations += added;
    pack.counters.selected_sources += added;
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Twelve lines; line `rare` (1-based) mentions a term no other candidate holds.
    fn chunk(rare: usize) -> String {
        (1..=12)
            .map(|n| {
                if n == rare {
                    format!("let v{n} = ledger.overflow(); // {n}\n")
                } else {
                    format!("let v{n} = ledger.step(); // {n}\n")
                }
            })
            .collect()
    }

    #[test]
    fn a_glimpse_shows_the_signature_not_an_attribute_or_a_doc_comment() {
        let rust = "\n#[test]\n/// Checks `budgets_are_enforced`.\nfn budgets_are_enforced() {\n    run();\n}\n";
        assert_eq!(
            glimpse_line(rust, Some("tests::budgets_are_enforced")),
            Some((3, "fn budgets_are_enforced() {\n"))
        );
        let python = "@property\ndef max_content_length(self):\n    return 1\n";
        assert_eq!(
            glimpse_line(python, Some("Request.max_content_length")),
            Some((1, "def max_content_length(self):\n"))
        );
        assert_eq!(
            glimpse_line("# Budgets\n\ntext\n", Some("Budgets")),
            Some((0, "# Budgets\n"))
        );
        // A name that only appears inside another word, or no name: the first line that is
        // not blank.
        assert_eq!(
            glimpse_line("\n#[test]\nfn budgets_x() {}\n", Some("budgets")),
            Some((1, "#[test]\n"))
        );
        assert_eq!(
            glimpse_line("\n\nlet a = 1;\n", None),
            Some((2, "let a = 1;\n"))
        );
    }

    #[test]
    fn a_glimpse_costs_its_line_whether_read_from_stored_counts_or_counted() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let signature = "fn budgets_are_enforced(limit: u64) -> bool { limit > 0 }\n";
        // Followed by a blank line, the signature's closing brace and both line breaks are one
        // piece: no count is known at the next line's start, and the line is counted. After
        // a doc comment and before another line, pieces start at both its ends.
        for (text, known) in [
            (format!("{signature}\nfn other() {{}}\n"), false),
            (format!("/// Budgets.\n{signature}fn other() {{}}\n"), true),
        ] {
            let lines = text.lines().count() as u32;
            let mut candidate = Candidate::new(
                Citation::code("src/lib.rs", 1, lines, sha).0,
                text.as_str(),
                Meter::O200k,
            );
            candidate.location = Some(Location {
                path: "src/lib.rs".into(),
                start_line: 1,
                end_line: lines,
                symbol: Some("budgets_are_enforced".into()),
            });
            let counts = Meter::O200k.count_lines(&text).expect("an encoding");
            let counted = glimpse(&candidate, Meter::O200k, sha, None).expect("a glimpse");
            let read = glimpse(&candidate, Meter::O200k, sha, Some(&counts)).expect("a glimpse");
            assert_eq!(read, counted);
            assert_eq!(counted.text, signature);
            assert_eq!(counted.cost, Meter::O200k.count(signature));
            let line = usize::from(known);
            assert_eq!(counts.window(line, 1).is_some(), known, "{text:?}");
        }
    }

    #[test]
    fn the_best_candidates_are_whole_while_they_fit_half_the_budget() {
        let budget = |n| Budget::new(n).expect("a budget");
        // 400 + 500 fit 1,000; the third would take the run to 1,200.
        assert_eq!(shown_whole([400, 500, 300, 10], budget(2000)), 2);
        assert_eq!(shown_whole([1000, 1], budget(2000)), 1);
        // A first candidate over the share: none whole, though a later one would fit.
        assert_eq!(shown_whole([1001, 10], budget(2000)), 0);
        assert_eq!(shown_whole([], budget(2000)), 0);
        assert_eq!(shown_whole([u64::MAX, u64::MAX], budget(Budget::MAX)), 0);
    }

    #[test]
    fn a_cut_keeps_the_run_of_lines_around_the_rarest_match() {
        let other = "the ledger, again and again\n";
        let text = chunk(9);
        let terms = GoalTerms::new("ledger overflow", &[&text, other, other]);
        // "overflow" is in one text of three, "ledger" in all: the rarer term weighs more,
        // and every term weighs something.
        let weight = |term: &str| terms.weights[terms.index[term]];
        assert!(weight("overflow") > weight("ledger"));
        assert!(weight("ledger") > 0.0);
        // Four lines: every run of four that holds line 9 (lines 6–9 to 9–12) weighs the
        // same; the middle one of them is kept (lines 7 to 10, 0-based start 6).
        assert_eq!(matching_run(&text, 4, &terms), (6, 4));
        // A run from the chunk's start that holds as much keeps the signature in view.
        assert_eq!(matching_run(&chunk(2), 4, &terms), (0, 4));
        // No line matches: the first lines; a chunk no longer than the cut: whole.
        let none = GoalTerms::new("unrelated words", &[&text]);
        assert_eq!(matching_run(&text, 4, &none), (0, 4));
        assert_eq!(matching_run(&text, 12, &terms), (0, 12));
    }

    /// The weights by their definition: each line lowercased, and analysed when it holds a
    /// root.
    fn weights_by_definition(terms: &GoalTerms, text: &str) -> Vec<f64> {
        let mut reader = TermReader::default();
        text.split_inclusive('\n')
            .map(|line| {
                let lower = line.to_lowercase();
                if !terms.roots.iter().any(|r| lower.contains(r.as_str())) {
                    return 0.0;
                }
                let mut seen = vec![false; terms.weights.len()];
                let mut weight = 0.0;
                for term in reader.terms(line) {
                    if let Some(&i) = terms.index.get(term)
                        && !std::mem::replace(&mut seen[i], true)
                    {
                        weight += terms.weights[i];
                    }
                }
                weight
            })
            .collect()
    }

    #[test]
    fn the_lines_holding_the_goals_terms_are_found_in_one_pass_as_line_by_line() {
        let texts = [
            "fn parse_Ledger() {\n    // no match here\n    LEDGER.overflow();\n}\n",
            "Überlauf im Ledger\nİstanbul ledger\nno match\nledger at the end",
            "\n\nLedgers and overflows\n\n",
            "ledger",
            "",
            "one line without the terms\n",
            "LEDGER\r\nOverflow\r\n",
            "policies policy POLICIES\nthe end\n",
        ];
        for goal in ["ledger overflow", "update the policies", "überlauf", "x"] {
            let terms = GoalTerms::new(goal, &texts);
            for text in texts {
                assert_eq!(
                    terms.lines(text),
                    weights_by_definition(&terms, text),
                    "{goal:?} in {text:?}"
                );
            }
        }
        // The search finds lines past the first match of each line, and none without one.
        let terms = GoalTerms::new("ledger overflow", &texts);
        assert_eq!(terms.lines_with_roots(texts[0]), vec![0, 2]);
        assert_eq!(terms.lines_with_roots(texts[1]), vec![0, 1, 3]);
        assert!(terms.lines_with_roots(texts[5]).is_empty());
    }

    /// Retrieved candidates of twelve-line chunks, one in seven with a secret in it.
    fn retrieved(n: usize, sha: &str) -> Vec<Retrieved> {
        (0..n)
            .map(|i| {
                let path = format!("src/m{i}.rs");
                let mut text = chunk(1 + i % 12);
                if i % 7 == 0 {
                    text.push_str("let token = \"ghp_Zq8wL2vR9pT4kX1mN6bY3cF7hJ0dS5aE2gU9\";\n");
                }
                let lines = ctxpack_meter::line_count(&text) as u32;
                let mut candidate = Candidate::new(
                    Citation::code(&path, 1, lines, sha).as_str(),
                    text,
                    Meter::O200k,
                );
                candidate.location = Some(ctxpack_core::Location {
                    path,
                    start_line: 1,
                    end_line: lines,
                    symbol: None,
                });
                Retrieved {
                    candidate,
                    score: 1.0,
                    breakdown: ctxpack_index::retrieve::Breakdown {
                        bm25: Default::default(),
                        chunk: 1.0,
                        file: 1.0,
                        prior: 1.0,
                        history: 0.0,
                        cochange: 0.0,
                        imported: 0.0,
                    },
                    redactions: Default::default(),
                    masked_by_current_rules: false,
                    o200k_lines: None,
                    artifact: None,
                }
            })
            .collect()
    }

    #[test]
    fn shaping_on_every_core_gives_what_shaping_one_by_one_gives() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let n = SHAPED_PER_THREAD * 4 + 5;
        let texts: Vec<String> = retrieved(n, sha)
            .into_iter()
            .map(|r| r.candidate.text)
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let terms = GoalTerms::new("ledger overflow", &texts);
        let together = shape_all(retrieved(n, sha), Some(&terms), 4, 0, Meter::O200k, sha);
        let one_by_one: Vec<Shaped> = retrieved(n, sha)
            .into_iter()
            .flat_map(|r| shape_all(vec![r], Some(&terms), 4, 0, Meter::O200k, sha))
            .collect();
        assert_eq!(together.len(), n);
        let cut = together.iter().filter(|s| s.uncut.is_some()).count();
        assert_eq!(cut, n, "every candidate is longer than four lines");
        let masked = together
            .iter()
            .filter(|s| s.redactions.by_kind.values().sum::<u64>() > 0)
            .count();
        assert_eq!(masked, n.div_ceil(7), "the secrets are masked");
        for (i, (a, b)) in together.iter().zip(&one_by_one).enumerate() {
            assert_eq!(a.candidate, b.candidate, "candidate {i}");
            assert_eq!(a.glimpse, b.glimpse, "glimpse {i}");
            assert_eq!(a.uncut, b.uncut, "uncut {i}");
            assert_eq!(a.redactions, b.redactions, "redactions {i}");
            assert!(
                a.candidate
                    .citation
                    .as_str()
                    .contains(&format!("src/m{i}.rs"))
            );
        }
    }
}
