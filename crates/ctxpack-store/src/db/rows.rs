//! What the store's tables hold, as the rest of the crate reads and writes it: snapshots, file
//! versions, chunks and their heads.

use std::collections::BTreeMap;

use super::schema::has_test_marker;
use ctxpack_meter::{LineCounts, Meter};

/// The `o200k` line counts stored with a chunk whose text is `text` and whose stored `o200k`
/// cost is `cost`, when they were stored and agree with both (anything else is read as not
/// stored: the run is counted).
pub(super) fn stored_line_counts(
    bytes: Option<Vec<u8>>,
    text: &str,
    cost: Option<u64>,
) -> Option<LineCounts> {
    let counts = LineCounts::from_bytes(&bytes?)?;
    let lines = ctxpack_meter::line_count(text);
    (counts.lines() == lines && Some(counts.total()) == cost).then_some(counts)
}

/// Where the line opening the innermost definition around a chunk's later lines changes: from
/// line `.0` on, inside the definition opened at `.1` (`(1-based number, text)`), or inside none.
pub type InsideRuns = Vec<(u32, Option<(u32, String)>)>;

/// `NewChunk::inside` of a chunk starting at `start` as stored: `[[line, opening line], …]`,
/// with the opening's text (`[line, opening line, text]`) only when it is above the chunk (the
/// text of a line inside it is read back from the chunk's), and `[line]` for lines inside no
/// definition.
pub(crate) fn inside_json(start: u32, inside: &[(u32, Option<(u32, String)>)]) -> String {
    let runs: Vec<serde_json::Value> = inside
        .iter()
        .map(|(line, opening)| match opening {
            Some((at, _)) if *at >= start => serde_json::json!([line, at]),
            Some((at, text)) => serde_json::json!([line, at, text]),
            None => serde_json::json!([line]),
        })
        .collect();
    serde_json::Value::Array(runs).to_string()
}

/// Reads [`inside_json`]'s form back for the chunk of lines `start..=end` whose stored text is
/// `text`; `None` for anything else (a damaged row is worked out by parsing, as a chunk that
/// recorded nothing is): runs out of order or outside the chunk, an opening not above its
/// line, a line inside the chunk with text or one above it without.
pub(crate) fn inside_from_json(json: &str, start: u32, end: u32, text: &str) -> Option<InsideRuns> {
    let runs: Vec<serde_json::Value> = serde_json::from_str(json).ok()?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = Vec::with_capacity(runs.len());
    let mut last = start;
    for run in &runs {
        let run = run.as_array().filter(|r| r.len() <= 3)?;
        let line = u32::try_from(run.first()?.as_u64()?).ok()?;
        if line <= last || line > end {
            return None;
        }
        last = line;
        let at = match run.get(1) {
            Some(at) => Some(
                u32::try_from(at.as_u64()?)
                    .ok()
                    .filter(|at| (1..line).contains(at))?,
            ),
            None => None,
        };
        let opening = match (at, run.get(2)) {
            (None, None) => None,
            (Some(at), None) if at >= start => {
                let row = usize::try_from(at - start).ok()?;
                Some((
                    at,
                    lines.get(row)?.trim_end_matches(['\n', '\r']).to_owned(),
                ))
            }
            (Some(at), Some(text)) if at < start => Some((at, text.as_str()?.to_owned())),
            _ => return None,
        };
        out.push((line, opening));
    }
    Some(out)
}

/// An indexed snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotRow {
    /// Full commit SHA.
    pub sha: String,
    /// Unix seconds when it was committed to the store.
    pub indexed_at: i64,
    /// Files in its manifest (skipped ones included).
    pub files: u64,
    /// Chunks of its files.
    pub chunks: u64,
    /// Skipped files by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Seconds the index run took.
    pub seconds: f64,
    /// Whether it is pinned (never removed by a `gc` rule).
    pub pinned: bool,
}

/// Statistics of an index run, recorded with its snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SnapshotStats {
    /// Files in the manifest.
    pub files: u64,
    /// Chunks of those files.
    pub chunks: u64,
    /// Skipped files by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Seconds the run took.
    pub seconds: f64,
}

/// A stored file version: one path with one blob, chunked by one chunker version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileVersion {
    /// Its id.
    pub id: i64,
    /// Whether its lexical entries are committed (false after a crash mid-run).
    pub ready: bool,
}

/// A chunk to store.
#[derive(Clone, Debug, PartialEq)]
pub struct NewChunk {
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// The symbol it defines, if known.
    pub symbol: Option<String>,
    /// Masked text.
    pub text: String,
    /// Cost per meter, in the order of [`Meter::ALL`]; `None` for meters not configured.
    pub costs: [Option<u64>; 5],
    /// Secrets masked in it, by kind.
    pub redactions: BTreeMap<String, u64>,
    /// The line opening the definition its first line is inside of: `(1-based number, text)`,
    /// kept only when masking leaves the line as it is.
    pub enclosing: Option<(u32, String)>,
    /// The same for its later lines, where it changes: from line `.0` on, inside the
    /// definition opened at `.1` (kept only when masking leaves that line as it is) or none.
    /// `None` when not recorded (a chunk stored before format 9, or published without it).
    pub inside: Option<InsideRuns>,
    /// Its `o200k` tokens before each of its lines, when counted in `o200k`.
    pub o200k_lines: Option<LineCounts>,
}

/// A file version to store.
#[derive(Clone, Debug, PartialEq)]
pub struct NewFile {
    /// Repository-relative path.
    pub path: String,
    /// Git blob id (hex).
    pub blob: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Why it was not chunked, if it was skipped.
    pub skip_reason: Option<String>,
    /// Its chunks (empty when skipped).
    pub chunks: Vec<NewChunk>,
    /// What it imports as ranking reads it (the index crate's encoding), when worked out:
    /// stored with the version, so a pack need not parse its chunks for it.
    pub imports: Option<String>,
}

/// A stored chunk with its file.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkRow {
    /// Chunk id.
    pub id: i64,
    /// File version id.
    pub file_id: i64,
    /// Repository-relative path.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// Symbol, if known.
    pub symbol: Option<String>,
    /// Masked text.
    pub text: String,
    /// Cost per meter in the order of [`Meter::ALL`].
    pub costs: [Option<u64>; 5],
    /// Secrets masked, by kind.
    pub redactions: BTreeMap<String, u64>,
    /// The chunker version its file version was stored with (which names the masking rules
    /// its text was masked by); 0 for a row not read from the store.
    pub chunker: u32,
    /// Its `o200k` tokens before each of its lines, when stored ([`NewChunk::o200k_lines`]).
    pub o200k_lines: Option<LineCounts>,
}

/// A stored chunk's place and name, without its text: what ranking reads of every chunk it
/// weighs, before it keeps the best and reads those whole ([`Store::chunk_heads`](super::Store::chunk_heads)).
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkHead {
    /// Chunk id.
    pub id: i64,
    /// File version id.
    pub file_id: i64,
    /// Repository-relative path.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// Symbol, if known.
    pub symbol: Option<String>,
    /// Whether its text holds one of [`TEST_MARKERS`](super::TEST_MARKERS).
    pub test_marker: bool,
}

impl ChunkRow {
    /// Its head.
    pub fn head(&self) -> ChunkHead {
        ChunkHead {
            id: self.id,
            file_id: self.file_id,
            path: self.path.clone(),
            start_line: self.start_line,
            end_line: self.end_line,
            symbol: self.symbol.clone(),
            test_marker: has_test_marker(&self.text),
        }
    }

    /// The cost in `meter`, computed now if the store was not configured for it.
    pub fn cost(&self, meter: Meter) -> u64 {
        let i = Meter::ALL
            .iter()
            .position(|m| *m == meter)
            .expect("Meter::ALL lists every meter");
        self.costs[i].unwrap_or_else(|| meter.count(&self.text))
    }
}

pub(super) fn snapshot_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SnapshotRow> {
    let skipped: String = r.get(4)?;
    Ok(SnapshotRow {
        sha: r.get(0)?,
        indexed_at: r.get(1)?,
        files: r.get::<_, i64>(2)? as u64,
        chunks: r.get::<_, i64>(3)? as u64,
        skipped: serde_json::from_str(&skipped).unwrap_or_default(),
        seconds: r.get(5)?,
        pinned: r.get::<_, i64>(6)? != 0,
    })
}
