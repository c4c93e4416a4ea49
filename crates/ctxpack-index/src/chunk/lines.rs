//! The lines of a file as the chunker counts them, the limits it cuts to, and the spans it
//! makes: line windows where no syntax applies, and small spans merged into neighbours.

use tree_sitter::Node;

use super::{ChunkOptions, Sym, better, one_based};

/// The options made safe to compute with: every length at least one line, the overlap
/// smaller than the window (so windows always advance) and `min <= max`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub(super) max: usize,
    min: usize,
    window: usize,
    step: usize,
}

impl Limits {
    pub(super) fn new(options: &ChunkOptions) -> Self {
        let as_usize = |n: u32| usize::try_from(n).unwrap_or(usize::MAX);
        let max = as_usize(options.max_lines).max(1);
        let window = as_usize(options.window).max(1);
        let overlap = as_usize(options.overlap).min(window - 1);
        Self {
            max,
            min: as_usize(options.min_lines).min(max),
            window,
            step: window - overlap,
        }
    }
}

/// Where each line starts. Lines end at `\n` (kept in the line); a final `\n` does not start
/// another line, and a lone `\r` is an ordinary character — the same lines as `str::lines`.
pub(super) struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(i, byte)| byte == b'\n' && i + 1 < text.len())
                .map(|(i, _)| i + 1),
        );
        Self { text, starts }
    }

    pub(super) fn count(&self) -> usize {
        self.starts.len()
    }

    /// The 0-based line holding byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// The 0-based lines a node spans, or None for a zero-width (missing) node.
    pub(super) fn of_node(&self, node: Node<'_>) -> Option<(usize, usize)> {
        let (start, end) = (node.start_byte(), node.end_byte());
        (end > start).then(|| (self.line_of(start), self.line_of(end - 1)))
    }

    /// Line `row` (0-based) as `(1-based number, text without the line break)`.
    pub(super) fn numbered(&self, row: usize) -> (u32, String) {
        let text = self.slice(row, row).trim_end_matches(['\n', '\r']);
        (one_based(row), text.to_owned())
    }

    /// Lines `start..=end` (0-based) with their line endings.
    pub(super) fn slice(&self, start: usize, end: usize) -> &'a str {
        let (from, to) = self.bytes(start, end);
        // Line starts follow a `\n`, so they are always character boundaries.
        self.text.get(from..to).unwrap_or_default()
    }

    /// The byte range of lines `start..=end` (0-based) with their line endings.
    pub(super) fn bytes(&self, start: usize, end: usize) -> (usize, usize) {
        let from = self.starts.get(start).copied().unwrap_or(self.text.len());
        let to = self.starts.get(end + 1).copied().unwrap_or(self.text.len());
        (from, to)
    }
}

/// A chunk under construction, in 0-based lines.
#[derive(Clone, Debug)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) sym: Option<Sym>,
    /// Part of a run of overlapping line windows: never merged with a neighbour.
    pub(super) window: bool,
}

impl Span {
    pub(super) fn len(&self) -> usize {
        self.end - self.start + 1
    }
}

/// Windows of `limits.window` lines over `start..=end`, each starting `limits.step` lines
/// after the previous one; the last one ends exactly at `end`.
pub(super) fn windows(start: usize, end: usize, sym: Option<Sym>, limits: Limits) -> Vec<Span> {
    let mut spans = Vec::with_capacity((end - start) / limits.step + 1);
    let mut from = start;
    loop {
        let to = end.min(from.saturating_add(limits.window - 1));
        spans.push(Span {
            start: from,
            end: to,
            sym: sym.clone(),
            window: true,
        });
        if to >= end {
            break;
        }
        from += limits.step;
    }
    if let [only] = spans.as_mut_slice() {
        only.window = false;
    }
    spans
}

/// Whether `spans` cover lines `0..=last` in order: each starts and ends after the previous
/// one and leaves no line between them.
pub(super) fn covers(spans: &[Span], last: usize) -> bool {
    let (Some(first), Some(final_span)) = (spans.first(), spans.last()) else {
        return false;
    };
    first.start == 0
        && final_span.end == last
        && spans.iter().all(|span| span.start <= span.end)
        && spans.windows(2).all(|pair| {
            let (a, b) = (&pair[0], &pair[1]);
            b.start > a.start && b.end > a.end && b.start <= a.end + 1
        })
}

/// Merges each non-window span shorter than `limits.min` into the span before it, or else the
/// one after it, when the result stays within `limits.max`.
pub(super) fn merge_small(spans: Vec<Span>, limits: Limits) -> Vec<Span> {
    let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
    let mut carry: Option<Span> = None;
    for mut span in spans {
        if let Some(small) = carry.take() {
            if !span.window && span.end - small.start < limits.max {
                span.start = small.start;
                span.sym = better(small.sym, span.sym.take());
            } else {
                merged.push(small);
            }
        }
        if span.window || span.len() >= limits.min {
            merged.push(span);
            continue;
        }
        match merged.last_mut() {
            Some(previous) if !previous.window && span.end - previous.start < limits.max => {
                previous.end = span.end;
                previous.sym = better(previous.sym.take(), span.sym);
            }
            _ => carry = Some(span),
        }
    }
    merged.extend(carry);
    merged
}
