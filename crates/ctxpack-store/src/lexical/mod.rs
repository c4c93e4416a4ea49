//! The lexical index: BM25 over chunk text, paths and symbols, with code-aware analysis.
//!
//! Terms are produced by [`analyze`], not by a tantivy tokenizer, so indexing and querying
//! share exactly one analysis: identifiers are kept whole *and* split on `snake_case`,
//! `camelCase` and letter/digit boundaries, lowercased, with a light plural stemmer.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tantivy::postings::Postings;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::Token;
use tantivy::{
    DocId, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, TERMINATED, TantivyDocument, Term,
};

use crate::error::StoreError;

mod extra;

use extra::Analyzed;
pub use extra::ExtraDoc;

/// The file versions a search covers: a snapshot's, or some of them. A search asks it of every
/// chunk in the lexical index (hundreds of thousands in a monorepo), so membership is a bit
/// when the ids lie close together, as a store's ids do, and a binary search otherwise; either
/// way it holds a bounded multiple of the ids given, whatever their values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileSet {
    /// Ids from `base` on, one bit each (when `dense`), or the ids sorted (when not).
    words: Vec<u64>,
    base: u64,
    dense: bool,
    len: usize,
}

impl FileSet {
    /// Bits a dense set may hold per id it was given, beyond a fixed allowance: ids spread
    /// wider than this are kept sorted instead.
    const BITS_PER_ID: u64 = 64;
    const BITS_ALLOWED: u64 = 1 << 16;

    /// Whether the set holds file version `id`.
    pub fn contains(&self, id: u64) -> bool {
        if self.dense {
            let Some(bit) = id.checked_sub(self.base) else {
                return false;
            };
            usize::try_from(bit / 64)
                .ok()
                .and_then(|word| self.words.get(word))
                .is_some_and(|word| word >> (bit % 64) & 1 == 1)
        } else {
            self.words.binary_search(&id).is_ok()
        }
    }

    /// The number of file versions in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl FromIterator<u64> for FileSet {
    fn from_iter<I: IntoIterator<Item = u64>>(ids: I) -> FileSet {
        let mut ids: Vec<u64> = ids.into_iter().collect();
        let (Some(&first), Some(&last)) = (ids.iter().min(), ids.iter().max()) else {
            return FileSet::default();
        };
        let span = last - first;
        let allowed = |len: usize| {
            (len as u64)
                .saturating_mul(FileSet::BITS_PER_ID)
                .saturating_add(FileSet::BITS_ALLOWED)
        };
        // Close ids (a store's) are set as bits where they lie, without sorting them; the
        // span is held to what the distinct ids allow, counted from the bits.
        if span < allowed(ids.len()) {
            let mut words = vec![0u64; usize::try_from(span / 64 + 1).unwrap_or(0)];
            for &id in &ids {
                let bit = id - first;
                if let Some(word) = usize::try_from(bit / 64)
                    .ok()
                    .and_then(|w| words.get_mut(w))
                {
                    *word |= 1 << (bit % 64);
                }
            }
            let len = words.iter().map(|w| w.count_ones() as usize).sum();
            if span < allowed(len) {
                return FileSet {
                    words,
                    base: first,
                    dense: true,
                    len,
                };
            }
        }
        ids.sort_unstable();
        ids.dedup();
        FileSet {
            len: ids.len(),
            words: ids,
            base: 0,
            dense: false,
        }
    }
}

/// Boosts of the path and symbol fields relative to chunk text.
const PATH_BOOST: f32 = 1.5;
const SYMBOL_BOOST: f32 = 2.0;

/// Longest term kept; longer runs are hashes, base64 or minified code.
const MAX_TERM_LEN: usize = 48;

/// Query words that carry no evidence.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "of", "on", "or", "should", "that", "the", "this", "to", "we", "what",
    "when", "where", "which", "why", "with", "you",
];

/// A lexical hit: a chunk id, its file version's and its BM25 score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LexicalHit {
    /// The chunk id.
    pub chunk_id: i64,
    /// The id of the chunk's file version (0 for a chunk searched beside the index).
    pub file_id: i64,
    /// Combined score.
    pub score: f32,
    /// Per-field contributions.
    pub breakdown: ScoreBreakdown,
}

/// How a lexical score decomposes by field.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScoreBreakdown {
    /// BM25 over chunk text.
    pub text: f32,
    /// BM25 over the path, boosted.
    pub path: f32,
    /// BM25 over the symbol name, boosted.
    pub symbol: f32,
}

/// The analyzed terms of a goal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryTerms(pub Vec<String>);

impl QueryTerms {
    /// Analyzes a goal: the same analysis as indexing, minus stopwords, deduplicated in order.
    pub fn from_goal(goal: &str) -> QueryTerms {
        let mut seen = HashSet::new();
        QueryTerms(
            analyze(goal)
                .into_iter()
                .filter(|t| !STOPWORDS.contains(&t.as_str()))
                .filter(|t| seen.insert(t.clone()))
                .collect(),
        )
    }
}

/// Splits text into index terms: each identifier whole (when it has parts) and its parts,
/// lowercased and lightly stemmed.
pub fn analyze(text: &str) -> Vec<String> {
    let mut terms = TermBuffer::default();
    terms.fill(text);
    terms.iter().map(str::to_owned).collect()
}

/// [`analyze`] for many short texts one after another (a pack weighing each line of its
/// chunks): the same terms, with no string allocated per term or per text.
#[derive(Clone, Default)]
pub struct TermReader {
    buffer: TermBuffer,
}

impl TermReader {
    /// The terms of `text`, as [`analyze`] returns them.
    pub fn terms(&mut self, text: &str) -> impl Iterator<Item = &str> {
        self.buffer.fill(text);
        self.buffer.iter()
    }
}

/// The terms of one text, written end to end into one string: analysing a chunk costs a few
/// growing buffers, reused from chunk to chunk, instead of several strings per term.
#[derive(Clone, Default)]
struct TermBuffer {
    /// The terms, end to end.
    text: String,
    /// Where each term ends in `text`.
    ends: Vec<usize>,
}

impl TermBuffer {
    /// Replaces the terms with those of `text`.
    fn fill(&mut self, text: &str) {
        self.text.clear();
        self.ends.clear();
        let mut parts = Vec::new();
        for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            let word = word.trim_matches('_');
            if word.is_empty() || word.len() > MAX_TERM_LEN * 2 {
                continue;
            }
            parts.clear();
            split_identifier(word, &mut parts);
            if parts.len() > 1 && word.len() <= MAX_TERM_LEN {
                self.push(word);
            }
            for part in &parts {
                if part.len() <= MAX_TERM_LEN {
                    self.push(part);
                }
            }
        }
    }

    /// Appends `word` lowercased and stemmed.
    fn push(&mut self, word: &str) {
        let start = self.ends.last().copied().unwrap_or(0);
        if word.is_ascii() {
            self.text
                .extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            // Whole-string lowercasing, which knows a final sigma; rare in code.
            self.text.push_str(&word.to_lowercase());
        }
        match stem_of(&self.text[start..]) {
            Stem::Keep => {}
            Stem::Drop(n) => self.text.truncate(self.text.len() - n),
            Stem::IesToY => {
                self.text.truncate(self.text.len() - 3);
                self.text.push('y');
            }
        }
        self.ends.push(self.text.len());
    }

    /// Term `i`, if there are that many.
    fn term(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        Some(&self.text[start..end])
    }

    /// The terms, in order.
    fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.ends.len()).filter_map(|i| self.term(i))
    }
}

/// `parseHTTPRequest2_v` → `parse`, `HTTP`, `Request`, `2`, `v` (appended to `parts`).
fn split_identifier<'t>(word: &'t str, parts: &mut Vec<&'t str>) {
    for piece in word.split('_').filter(|p| !p.is_empty()) {
        let mut chars = piece.char_indices().peekable();
        let Some((_, mut prev)) = chars.next() else {
            continue;
        };
        let mut start = 0;
        while let Some((at, c)) = chars.next() {
            if part_starts(prev, c, chars.peek().map(|&(_, n)| n)) {
                parts.push(&piece[start..at]);
                start = at;
            }
            prev = c;
        }
        parts.push(&piece[start..]);
    }
}

/// Whether a new part of an identifier starts at `c`, between `prev` and `next`: at a case
/// change (`parseHttp`, the `R` of `HTTPRequest`) and between letters and digits.
fn part_starts(prev: char, c: char, next: Option<char>) -> bool {
    (prev.is_lowercase() && c.is_uppercase())
        || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
        || (prev.is_alphabetic() && c.is_numeric())
        || (prev.is_numeric() && c.is_alphabetic())
}

/// What the light English plural stemmer does to a lowercased term: `budgets` → `budget`,
/// `queries` → `query`, `classes` → `class`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stem {
    /// Nothing.
    Keep,
    /// Drops this many bytes from the end.
    Drop(usize),
    /// `-ies` becomes `-y`.
    IesToY,
}

fn stem_of(term: &str) -> Stem {
    let n = term.len();
    if !term.is_ascii() || n <= 3 {
        return Stem::Keep;
    }
    if term.ends_with("ies") && n > 4 {
        return Stem::IesToY;
    }
    if term.ends_with("sses") {
        return Stem::Drop(2);
    }
    if term.ends_with('s')
        && !term.ends_with("ss")
        && !term.ends_with("us")
        && !term.ends_with("is")
    {
        return Stem::Drop(1);
    }
    Stem::Keep
}

/// The name the text fields give their tokenizer. Indexes written before the analysis ran
/// inside tantivy stored pre-analyzed tokens under a tokenizer named `raw`; the schema keeps
/// that name so they open unchanged, and every index maps it to [`Analyzer`], which produces
/// exactly the tokens those documents carried.
const TOKENIZER: &str = "raw";

/// [`analyze`] as a tantivy tokenizer: one token per term, at consecutive positions.
///
/// Handing tantivy the text and analyzing it there, instead of adding pre-tokenized values,
/// spares indexing a JSON encoding and decoding of every document's token list.
#[derive(Clone, Default)]
struct Analyzer {
    token: Token,
    terms: TermBuffer,
}

struct Terms<'a> {
    terms: &'a TermBuffer,
    token: &'a mut Token,
    /// The next term's index.
    next: usize,
}

impl tantivy::tokenizer::Tokenizer for Analyzer {
    type TokenStream<'a> = Terms<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Terms<'a> {
        self.token.reset();
        self.terms.fill(text);
        Terms {
            terms: &self.terms,
            token: &mut self.token,
            next: 0,
        }
    }
}

impl tantivy::tokenizer::TokenStream for Terms<'_> {
    fn advance(&mut self) -> bool {
        let Some(term) = self.terms.term(self.next) else {
            return false;
        };
        self.token.text.clear();
        self.token.text.push_str(term);
        self.token.position = self.next;
        self.token.position_length = 1;
        self.next += 1;
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

#[derive(Clone, Copy)]
struct Fields {
    chunk_id: Field,
    file_id: Field,
    text: Field,
    path: Field,
    symbol: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let indexed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        chunk_id: b.add_u64_field("chunk_id", FAST),
        file_id: b.add_u64_field("file_id", FAST | INDEXED),
        text: b.add_text_field("text", indexed.clone()),
        path: b.add_text_field("path", indexed.clone()),
        symbol: b.add_text_field("symbol", indexed),
    };
    (b.build(), fields)
}

/// A chunk as the lexical index sees it (borrowed: the index copies what it keeps).
pub(crate) struct LexicalDoc<'a> {
    pub chunk_id: u64,
    pub file_id: u64,
    pub path: &'a str,
    pub symbol: Option<&'a str>,
    pub text: &'a str,
}

pub(crate) struct Lexical {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

/// A writer with what it needs of its index (so a store can keep one open across calls).
pub(crate) struct LexicalWriter {
    dir: PathBuf,
    reader: IndexReader,
    fields: Fields,
    writer: IndexWriter<TantivyDocument>,
}

fn lex_error(dir: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Lexical {
        dir: dir.to_owned(),
        detail: e.to_string(),
    }
}

fn lex_corrupt(dir: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        dir: dir.to_owned(),
        detail: format!("the lexical index cannot be opened: {e}"),
    }
}

impl Lexical {
    /// Opens the index in the directory `name` of the store; creates it when `create` is set
    /// and it is missing. `Ok(None)` when it is missing and may not be created.
    pub(crate) fn open(
        store_dir: &Path,
        name: &str,
        create: bool,
    ) -> Result<Option<Lexical>, StoreError> {
        if name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(StoreError::Corrupt {
                dir: store_dir.to_owned(),
                detail: format!("the database names `{name}` as its lexical index"),
            });
        }
        crate::guard::no_links_below(store_dir, Path::new(name))?;
        let dir = store_dir.join(name);
        let (schema, fields) = schema();
        let index = if dir.join("meta.json").is_file() {
            let index = Index::open_in_dir(&dir).map_err(|e| lex_corrupt(store_dir, e))?;
            if index.schema() != schema {
                return Err(StoreError::Corrupt {
                    dir: store_dir.to_owned(),
                    detail: "the lexical index has an unexpected schema".into(),
                });
            }
            index
        } else if create {
            crate::guard::create_dirs(store_dir, Path::new(name))?;
            Index::create_in_dir(&dir, schema).map_err(|e| lex_error(store_dir, e))?
        } else {
            return Ok(None);
        };
        index.tokenizers().register(TOKENIZER, Analyzer::default());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| lex_corrupt(store_dir, e))?;
        Ok(Some(Lexical {
            dir: store_dir.to_owned(),
            index,
            reader,
            fields,
        }))
    }

    /// The index files whose content no longer matches their checksum (reads every file).
    pub(crate) fn damaged_files(&self) -> Vec<String> {
        match self.index.validate_checksum() {
            Ok(files) => {
                let mut names: Vec<String> =
                    files.iter().map(|p| p.display().to_string()).collect();
                names.sort();
                names
            }
            Err(e) => vec![format!("the index cannot be read: {e}")],
        }
    }

    /// Entries (chunks) the index holds, deleted ones excluded.
    pub(crate) fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// A writer, holding tantivy's directory lock until it commits.
    ///
    /// Only the store's own writer lock lets a process get here, so tantivy's lock is never
    /// held by another writer; it can still be busy for an instant after this process released
    /// it, because the lock is an `flock` on an open file and a child process forked by another
    /// thread (to run git, say) holds a copy of that file until it runs its program. So a busy
    /// lock is tried again, a bounded number of times, before it is reported.
    pub(crate) fn writer(&self) -> Result<LexicalWriter, StoreError> {
        const ATTEMPTS: u32 = 50;
        let mut attempt = 1;
        let writer = loop {
            match self.index.writer_with_num_threads(1, 64 * 1024 * 1024) {
                Ok(writer) => break writer,
                Err(tantivy::TantivyError::LockFailure(
                    tantivy::directory::error::LockError::LockBusy,
                    _,
                )) if attempt < ATTEMPTS => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(lex_error(&self.dir, e)),
            }
        };
        Ok(LexicalWriter {
            dir: self.dir.clone(),
            reader: self.reader.clone(),
            fields: self.fields,
            writer,
        })
    }

    /// BM25 over the documents of the files in `allowed` and the `extra` documents beside
    /// them, every match scored, best first (equal scores by chunk id). The statistics —
    /// document count, average field lengths, document frequencies — are those of exactly
    /// these documents, so a score depends on what is searched and the terms, never on the
    /// other snapshots or the deleted entries the index also holds.
    ///
    /// With `k` above 0, only the hits scoring at least the `k`-th best score are returned
    /// (every hit tied with it included, so the caller can order the tie).
    pub(crate) fn search(
        &self,
        terms: &QueryTerms,
        allowed: &FileSet,
        extra: &[ExtraDoc],
        k: usize,
    ) -> Result<Vec<LexicalHit>, StoreError> {
        if terms.0.is_empty() {
            return Ok(Vec::new());
        }
        self.reader.reload().map_err(|e| lex_error(&self.dir, e))?;
        let searcher = self.reader.searcher();
        let segments = searcher.segment_readers();
        let f = self.fields;
        let fields = [
            (f.text, 1.0),
            (f.path, PATH_BOOST),
            (f.symbol, SYMBOL_BOOST),
        ];
        let err = |e: tantivy::TantivyError| lex_error(&self.dir, e);

        // Which documents are searched, and their field lengths in sum.
        let mut members = Vec::with_capacity(segments.len());
        let mut docs = extra.len() as u64;
        let mut tokens = [0u64; 3];
        for segment in segments {
            let file_ids = segment.fast_fields().u64("file_id").map_err(err)?;
            let norms = fields
                .iter()
                .map(|&(field, _)| segment.get_fieldnorms_reader(field))
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            let mut member = vec![false; segment.max_doc() as usize];
            for doc in segment.doc_ids_alive() {
                if file_ids.first(doc).is_some_and(|id| allowed.contains(id)) {
                    member[doc as usize] = true;
                    docs += 1;
                    for (sum, norm) in tokens.iter_mut().zip(&norms) {
                        *sum += u64::from(norm.fieldnorm(doc));
                    }
                }
            }
            members.push(member);
        }
        let extra: Vec<Analyzed> = extra.iter().map(Analyzed::new).collect();
        for doc in &extra {
            for (sum, field) in tokens.iter_mut().zip(&doc.fields) {
                *sum += u64::from(field.length);
            }
        }
        if docs == 0 {
            return Ok(Vec::new());
        }

        // Per matching document, the score of each field: terms added in query order. Each
        // segment's documents hold one more than their place in `matched` (0 until it first
        // matches): faster than hashing when a common term matches many documents, and zeroed,
        // so only the pages of documents that match are touched.
        let mut place: Vec<Vec<u32>> = members.iter().map(|m| vec![0; m.len()]).collect();
        let mut matched: Vec<(usize, DocId, [f32; 3])> = Vec::new();
        let mut extra_scores: HashMap<usize, [f32; 3]> = HashMap::new();
        for (slot, &(field, boost)) in fields.iter().enumerate() {
            let average = tokens[slot] as f32 / docs as f32;
            let bm25 = |freq: u32, length: u32, idf: f32| {
                let freq = freq as f32;
                let saturation = K1 * (1.0 - B + B * length as f32 / average);
                boost * idf * (K1 + 1.0) * freq / (freq + saturation)
            };
            for text in &terms.0 {
                let term = Term::from_field_text(field, text);
                let mut matches = Vec::new();
                for (ord, segment) in segments.iter().enumerate() {
                    let inverted = segment.inverted_index(field).map_err(err)?;
                    let Some(mut postings) = inverted
                        .read_postings(&term, IndexRecordOption::WithFreqs)
                        .map_err(|e| lex_error(&self.dir, e))?
                    else {
                        continue;
                    };
                    let norms = segment.get_fieldnorms_reader(field).map_err(err)?;
                    // Room for the term's documents, at most the segment's: a common term has many.
                    matches.reserve(postings.doc_freq().min(segment.max_doc()) as usize);
                    while postings.doc() != TERMINATED {
                        let doc = postings.doc();
                        if members[ord][doc as usize] {
                            matches.push((ord, doc, postings.term_freq(), norms.fieldnorm(doc)));
                        }
                        postings.advance();
                    }
                }
                let extra_matches: Vec<(usize, u32, u32)> = extra
                    .iter()
                    .enumerate()
                    .filter_map(|(i, doc)| {
                        let field = &doc.fields[slot];
                        field
                            .freqs
                            .get(text.as_str())
                            .map(|&freq| (i, freq, field.length))
                    })
                    .collect();
                let idf = idf((matches.len() + extra_matches.len()) as u64, docs);
                for (ord, doc, freq, length) in matches {
                    let at = &mut place[ord][doc as usize];
                    if *at == 0 {
                        *at = u32::try_from(matched.len() + 1).map_err(|_| {
                            lex_error(&self.dir, "more matching chunks than a search counts")
                        })?;
                        matched.push((ord, doc, [0.0; 3]));
                    }
                    matched[*at as usize - 1].2[slot] += bm25(freq, length, idf);
                }
                for (i, freq, length) in extra_matches {
                    extra_scores.entry(i).or_default()[slot] += bm25(freq, length, idf);
                }
            }
        }

        let mut ids = Vec::with_capacity(segments.len());
        for segment in segments {
            let fast = segment.fast_fields();
            ids.push((
                fast.u64("chunk_id").map_err(err)?,
                fast.u64("file_id").map_err(err)?,
            ));
        }
        let hit = |chunk_id: i64, file_id: u64, [text, path, symbol]: [f32; 3]| LexicalHit {
            chunk_id,
            file_id: file_id as i64,
            score: text + path + symbol,
            breakdown: ScoreBreakdown { text, path, symbol },
        };
        let mut hits: Vec<LexicalHit> = matched
            .into_iter()
            .filter_map(|(ord, doc, fields)| {
                let (chunk_ids, file_ids) = &ids[ord];
                Some(hit(
                    chunk_ids.first(doc)? as i64,
                    file_ids.first(doc)?,
                    fields,
                ))
            })
            .chain(
                extra_scores
                    .into_iter()
                    .map(|(i, fields)| hit(extra[i].id, 0, fields)),
            )
            .collect();
        let order = |a: &LexicalHit, b: &LexicalHit| {
            b.score
                .total_cmp(&a.score)
                .then(a.chunk_id.cmp(&b.chunk_id))
        };
        if k > 0 && hits.len() > k {
            // Only the best k and their ties are sorted.
            hits.select_nth_unstable_by(k - 1, order);
            let edge = hits[k - 1].score;
            hits.retain(|h| h.score >= edge);
        }
        hits.sort_by(order);
        Ok(hits)
    }
}

/// BM25's term-frequency saturation and length normalisation (tantivy's and Lucene's values).
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Inverse document frequency of a term in `doc_freq` of `docs` documents.
fn idf(doc_freq: u64, docs: u64) -> f32 {
    let rest = docs.saturating_sub(doc_freq) as f32;
    (1.0 + (rest + 0.5) / (doc_freq as f32 + 0.5)).ln()
}

impl LexicalWriter {
    pub(crate) fn delete_file(&mut self, file_id: i64) {
        self.writer
            .delete_term(Term::from_field_u64(self.fields.file_id, file_id as u64));
    }

    pub(crate) fn add(&mut self, doc: LexicalDoc<'_>) -> Result<(), StoreError> {
        let f = self.fields;
        let mut d = TantivyDocument::new();
        d.add_u64(f.chunk_id, doc.chunk_id);
        d.add_u64(f.file_id, doc.file_id);
        d.add_text(f.text, doc.text);
        d.add_text(f.path, doc.path);
        if let Some(symbol) = doc.symbol {
            d.add_text(f.symbol, symbol);
        }
        self.writer
            .add_document(d)
            .map_err(|e| lex_error(&self.dir, e))?;
        Ok(())
    }

    pub(crate) fn commit(mut self) -> Result<(), StoreError> {
        self.writer.commit().map_err(|e| lex_error(&self.dir, e))?;
        self.writer
            .wait_merging_threads()
            .map_err(|e| lex_error(&self.dir, e))?;
        // This process sees what it committed (counts, searches) without reopening.
        self.reader.reload().map_err(|e| lex_error(&self.dir, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Analysis as it was first written, one string per step (with the same rule for where a
    /// part starts): what the stored indexes were built with, so every later analysis must
    /// give exactly its terms.
    fn analyze_as_first_written(text: &str) -> Vec<String> {
        fn split(word: &str) -> Vec<&str> {
            let mut parts = Vec::new();
            for piece in word.split('_').filter(|p| !p.is_empty()) {
                let chars: Vec<(usize, char)> = piece.char_indices().collect();
                let mut start = 0;
                for i in 1..chars.len() {
                    let (at, c) = chars[i];
                    let prev = chars[i - 1].1;
                    let next = chars.get(i + 1).map(|&(_, n)| n);
                    if part_starts(prev, c, next) {
                        parts.push(&piece[start..at]);
                        start = at;
                    }
                }
                parts.push(&piece[start..]);
            }
            parts
        }
        fn stem(term: &str) -> String {
            let n = term.len();
            if !term.is_ascii() || n <= 3 {
                return term.to_owned();
            }
            if let Some(base) = term.strip_suffix("ies")
                && n > 4
            {
                return format!("{base}y");
            }
            if term.ends_with("sses") {
                return term[..n - 2].to_owned();
            }
            if term.ends_with('s')
                && !term.ends_with("ss")
                && !term.ends_with("us")
                && !term.ends_with("is")
            {
                return term[..n - 1].to_owned();
            }
            term.to_owned()
        }
        let mut out = Vec::new();
        for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            let word = word.trim_matches('_');
            if word.is_empty() || word.len() > MAX_TERM_LEN * 2 {
                continue;
            }
            let parts = split(word);
            if parts.len() > 1 && word.len() <= MAX_TERM_LEN {
                out.push(stem(&word.to_lowercase()));
            }
            for part in parts {
                if part.len() <= MAX_TERM_LEN {
                    out.push(stem(&part.to_lowercase()));
                }
            }
        }
        out
    }

    /// Pieces of text that exercise every rule: case changes, digits, separators, plural
    /// endings, letters whose lowercase is longer or ASCII (`İ`, the Kelvin sign), a final
    /// sigma, title case, marks and letters without case.
    const PIECES: &[&str] = &[
        "a", "b", "e", "i", "s", "u", "y", "A", "S", "Z", "0", "7", "_", " ", ".", "/", "\n", "'",
        "ies", "IES", "sses", "ss", "us", "is", "es", "parse", "HTTP", "Request", "Queries",
        "classes", "status", "é", "É", "ß", "Σ", "σ", "ς", "İ", "\u{212A}", "ǅ", "\u{301}", "中",
        "٣",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// The buffered analysis gives the terms the first one gave, on any text, and the
        /// tokenizer streams exactly those terms at consecutive positions.
        #[test]
        fn analysis_is_unchanged(
            pieces in proptest::collection::vec(proptest::sample::select(PIECES), 0..40),
            repeat in 1usize..30,
        ) {
            let word = pieces.concat();
            // Long runs reach the term length limits.
            let text = format!("{word} {}", word.replace(' ', "").repeat(repeat));
            let expected = analyze_as_first_written(&text);
            prop_assert_eq!(analyze(&text), expected.clone());
            let mut analyzer = Analyzer::default();
            // A second text through the same analyzer reuses its buffers.
            let _ = tantivy::tokenizer::Tokenizer::token_stream(&mut analyzer, "warm Up_buffers");
            let mut stream = tantivy::tokenizer::Tokenizer::token_stream(&mut analyzer, &text);
            let mut streamed = Vec::new();
            while tantivy::tokenizer::TokenStream::advance(&mut stream) {
                let token = tantivy::tokenizer::TokenStream::token(&stream);
                prop_assert_eq!(token.position, streamed.len());
                streamed.push(token.text.clone());
            }
            prop_assert_eq!(streamed, expected);
        }
    }

    #[test]
    fn analysis_is_code_aware() {
        let cases: &[(&str, &str)] = &[
            ("parseHTTPRequest", "parsehttprequest parse http request"),
            ("snake_case_name", "snake_case_name snake case name"),
            ("how are budgets enforced", "how are budget enforced"),
            ("utf8Decoder", "utf8decoder utf 8 decoder"),
            ("src/select.rs", "src select rs"),
            ("queries classes", "query class"),
            ("__init__", "init"),
        ];
        for (input, expected) in cases {
            assert_eq!(analyze(input).join(" "), *expected, "{input}");
        }
        assert_eq!(
            QueryTerms::from_goal("How are budgets enforced in the budget code?").0,
            ["budget", "enforced", "code"]
        );
    }

    /// Ids close together (as a store gives them) or spread wide, with repeats.
    fn ids() -> impl Strategy<Value = Vec<u64>> {
        prop_oneof![
            prop::collection::vec(1_000u64..3_000, 0..400),
            prop::collection::vec(any::<u64>(), 0..50),
            (prop::collection::vec(0u64..100, 1..50), any::<u64>()).prop_map(|(mut ids, far)| {
                ids.push(far);
                ids
            }),
        ]
    }

    proptest! {
        /// A set answers as a hash set of the same ids does, for each id and its neighbours,
        /// and holds no more than its bound of words whatever the ids are.
        #[test]
        fn a_file_set_holds_exactly_its_ids_in_bounded_memory(ids in ids(), probes in prop::collection::vec(any::<u64>(), 0..20)) {
            let set: FileSet = ids.iter().copied().collect();
            let expected: HashSet<u64> = ids.iter().copied().collect();
            prop_assert_eq!(set.len(), expected.len());
            let near = ids.iter().flat_map(|&id| [id.wrapping_sub(1), id, id.wrapping_add(1)]);
            for id in near.chain(probes).chain([0, u64::MAX]) {
                prop_assert_eq!(set.contains(id), expected.contains(&id), "id {}", id);
            }
            let bound = expected.len() * (FileSet::BITS_PER_ID as usize / 64 + 1)
                + FileSet::BITS_ALLOWED as usize / 64
                + 1;
            prop_assert!(set.words.len() <= bound, "{} words for {} ids", set.words.len(), expected.len());
        }
    }
}
