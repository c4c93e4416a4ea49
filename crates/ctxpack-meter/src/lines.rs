//! Token counts at line starts, so a run of a text's lines is costed without counting it again.
//!
//! A byte-pair encoding counts each piece of its pre-tokenizer on its own, so where a piece of
//! the whole text starts at a line's first byte, the tokens of a run of lines from there to
//! another such line (or the text's end) are the difference of the tokens before each: the
//! run's own pieces are the whole text's pieces between them. Where a piece spans a line break
//! (a run of blank lines is one piece, and so is `}` with the line break and a `/` after it)
//! nothing is known there. A run that starts or ends at such a line is costed by counting only
//! its lines up to the first, and from the last, of its own piece starts where the counts are
//! known (see `Encoding::count_run`).

/// How many lines `text` has as `str::split_inclusive('\n')` splits it (a last line without a
/// line break counts; an empty text has none), from a count of its line-break bytes.
pub fn line_count(text: &str) -> usize {
    let breaks = text.bytes().filter(|&b| b == b'\n').count();
    breaks + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The tokens of a text's pieces before the start of each of its lines, where a piece starts
/// there (`None` where a piece spans the line's start), and the total after the last line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineCounts(Vec<Option<u32>>);

/// Most lines [`LineCounts::from_bytes`] reads: stored chunks are far shorter, and a longer
/// record is damage.
const MAX_LINES: usize = 1 << 16;

impl LineCounts {
    /// From the tokens before each line start (`None` where no piece starts there) and the
    /// total.
    pub(crate) fn new(mut before: Vec<Option<u32>>, total: u32) -> LineCounts {
        before.push(Some(total));
        LineCounts(before)
    }

    /// The tokens of `count` lines from line `first` (0-based), when pieces start at both
    /// ends of the run; `None` when one does not, or the run is not within the text.
    pub fn window(&self, first: usize, count: usize) -> Option<u64> {
        let end = first.checked_add(count)?;
        let (from, to) = (*self.0.get(first)?, *self.0.get(end)?);
        Some(u64::from(to?.checked_sub(from?)?))
    }

    /// The tokens before line `line` (0-based; line [`lines`](LineCounts::lines) is the
    /// text's end, before which every token is), when a piece starts there.
    pub(crate) fn before(&self, line: usize) -> Option<u32> {
        self.0.get(line).copied().flatten()
    }

    /// The tokens of the whole text.
    pub fn total(&self) -> u64 {
        // Both ways of making counts end with the total.
        self.0.last().copied().flatten().map_or(0, u64::from)
    }

    /// How many lines the counted text had.
    pub fn lines(&self) -> usize {
        self.0.len() - 1
    }

    /// The counts as stored: per line start and then the total, LEB128 of one more than the
    /// tokens since the last known count, or 0 for none.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len());
        let mut last = 0u32;
        for entry in &self.0 {
            let mut v = match entry {
                None => 0u64,
                Some(n) => {
                    let delta = u64::from(n.saturating_sub(last)) + 1;
                    last = *n;
                    delta
                }
            };
            loop {
                let byte = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(byte);
                    break;
                }
                out.push(byte | 0x80);
            }
        }
        out
    }

    /// Counts read back from [`to_bytes`](LineCounts::to_bytes); `None` for bytes it could
    /// not have written (truncated, counts that go down or overflow, no total, too long).
    pub fn from_bytes(bytes: &[u8]) -> Option<LineCounts> {
        let mut entries = Vec::new();
        let mut last = 0u32;
        let mut v = 0u64;
        let mut shift = 0u32;
        for &byte in bytes {
            if shift > 28 {
                return None;
            }
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 != 0 {
                shift += 7;
                continue;
            }
            entries.push(match v {
                0 => None,
                delta => {
                    last = last.checked_add(u32::try_from(delta - 1).ok()?)?;
                    Some(last)
                }
            });
            if entries.len() > MAX_LINES + 1 {
                return None;
            }
            (v, shift) = (0, 0);
        }
        // Every record ends with a whole entry: the total.
        if shift != 0 || entries.last().is_none_or(Option::is_none) {
            return None;
        }
        Some(LineCounts(entries))
    }
}
