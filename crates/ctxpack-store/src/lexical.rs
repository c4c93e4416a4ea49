//! The lexical index: BM25 over chunk text, paths and symbols, with code-aware analysis.
//!
//! Terms are produced by [`analyze`], not by a tantivy tokenizer, so indexing and querying
//! share exactly one analysis: identifiers are kept whole *and* split on `snake_case`,
//! `camelCase` and letter/digit boundaries, lowercased, with a light plural stemmer.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::{BooleanQuery, BoostQuery, EnableScoring, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{PreTokenizedString, Token};
use tantivy::{
    DocAddress, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument,
    Term,
};

use crate::error::StoreError;

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

/// A lexical hit: a chunk id and its BM25 score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LexicalHit {
    /// The chunk id.
    pub chunk_id: i64,
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
    let mut out = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let word = word.trim_matches('_');
        if word.is_empty() || word.len() > MAX_TERM_LEN * 2 {
            continue;
        }
        let parts = split_identifier(word);
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

/// `parseHTTPRequest2_v` → `parse`, `HTTP`, `Request`, `2`, `v`.
fn split_identifier(word: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for piece in word.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<(usize, char)> = piece.char_indices().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (at, c) = chars[i];
            let prev = chars[i - 1].1;
            let next = chars.get(i + 1).map(|&(_, n)| n);
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(char::is_lowercase))
                || (prev.is_alphabetic() && c.is_numeric())
                || (prev.is_numeric() && c.is_alphabetic());
            if boundary {
                parts.push(&piece[start..at]);
                start = at;
            }
        }
        parts.push(&piece[start..]);
    }
    parts
}

/// A light English plural stemmer: `budgets` → `budget`, `queries` → `query`.
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

fn pre_tokenized(text: &str) -> PreTokenizedString {
    let tokens = analyze(text)
        .into_iter()
        .enumerate()
        .map(|(position, text)| Token {
            offset_from: 0,
            offset_to: 0,
            position,
            text,
            position_length: 1,
        })
        .collect();
    PreTokenizedString {
        text: String::new(),
        tokens,
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
            .set_tokenizer("raw")
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

/// A chunk as the lexical index sees it.
pub(crate) struct LexicalDoc {
    pub chunk_id: u64,
    pub file_id: u64,
    pub path: String,
    pub symbol: Option<String>,
    pub text: String,
}

pub(crate) struct Lexical {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

pub(crate) struct LexicalWriter<'a> {
    lexical: &'a Lexical,
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

    pub(crate) fn writer(&self) -> Result<LexicalWriter<'_>, StoreError> {
        let writer = self
            .index
            .writer_with_num_threads(1, 64 * 1024 * 1024)
            .map_err(|e| lex_error(&self.dir, e))?;
        Ok(LexicalWriter {
            lexical: self,
            writer,
        })
    }

    fn field_query(&self, field: Field, terms: &QueryTerms, boost: f32) -> BooleanQuery {
        let clauses = terms
            .0
            .iter()
            .map(|t| {
                let q = TermQuery::new(
                    Term::from_field_text(field, t),
                    IndexRecordOption::WithFreqs,
                );
                let q: Box<dyn Query> = if boost == 1.0 {
                    Box::new(q)
                } else {
                    Box::new(BoostQuery::new(Box::new(q), boost))
                };
                (Occur::Should, q)
            })
            .collect();
        BooleanQuery::new(clauses)
    }

    pub(crate) fn search(
        &self,
        terms: &QueryTerms,
        allowed: HashSet<u64>,
        k: usize,
    ) -> Result<Vec<LexicalHit>, StoreError> {
        if terms.0.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let f = self.fields;
        let text_q = self.field_query(f.text, terms, 1.0);
        let path_q = self.field_query(f.path, terms, PATH_BOOST);
        let symbol_q = self.field_query(f.symbol, terms, SYMBOL_BOOST);
        let query = BooleanQuery::new(vec![
            (Occur::Should, Box::new(text_q.clone()) as Box<dyn Query>),
            (Occur::Should, Box::new(path_q.clone())),
            (Occur::Should, Box::new(symbol_q.clone())),
        ]);
        self.reader.reload().map_err(|e| lex_error(&self.dir, e))?;
        let searcher = self.reader.searcher();
        // The collector allocates `k` slots up front: never more than there are chunks.
        let k = k.min(usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX));
        if k == 0 {
            return Ok(Vec::new());
        }
        let allowed = Arc::new(allowed);
        let collector = FilterCollector::new(
            "file_id".to_owned(),
            move |id: u64| allowed.contains(&id),
            TopDocs::with_limit(k).order_by_score(),
        );
        let top = searcher
            .search(&query, &collector)
            .map_err(|e| lex_error(&self.dir, e))?;
        let addrs: Vec<DocAddress> = top.iter().map(|&(_, addr)| addr).collect();
        let text = self.field_scores(&searcher, &text_q, &addrs)?;
        let path = self.field_scores(&searcher, &path_q, &addrs)?;
        let symbol = self.field_scores(&searcher, &symbol_q, &addrs)?;
        let mut hits = Vec::with_capacity(top.len());
        for (i, (score, addr)) in top.into_iter().enumerate() {
            let column = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("chunk_id")
                .map_err(|e| lex_error(&self.dir, e))?;
            let Some(chunk_id) = column.first(addr.doc_id) else {
                continue;
            };
            hits.push(LexicalHit {
                chunk_id: chunk_id as i64,
                score,
                breakdown: ScoreBreakdown {
                    text: text[i],
                    path: path[i],
                    symbol: symbol[i],
                },
            });
        }
        // Ties broken by chunk id so equal scores always come out in the same order.
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.chunk_id.cmp(&b.chunk_id))
        });
        Ok(hits)
    }
}

impl Lexical {
    /// The score `query` gives each of `addrs` (0 where it does not match). One scorer per
    /// segment is advanced through the documents in ascending order, as tantivy requires.
    fn field_scores(
        &self,
        searcher: &Searcher,
        query: &BooleanQuery,
        addrs: &[DocAddress],
    ) -> Result<Vec<f32>, StoreError> {
        let weight = query
            .weight(EnableScoring::enabled_from_searcher(searcher))
            .map_err(|e| lex_error(&self.dir, e))?;
        let mut scores = vec![0.0; addrs.len()];
        let mut order: Vec<usize> = (0..addrs.len()).collect();
        order.sort_by_key(|&i| (addrs[i].segment_ord, addrs[i].doc_id));
        let mut current: Option<(u32, Box<dyn tantivy::query::Scorer>)> = None;
        for i in order {
            let addr = addrs[i];
            if current
                .as_ref()
                .is_none_or(|(seg, _)| *seg != addr.segment_ord)
            {
                let scorer = weight
                    .scorer(searcher.segment_reader(addr.segment_ord), 1.0)
                    .map_err(|e| lex_error(&self.dir, e))?;
                current = Some((addr.segment_ord, scorer));
            }
            let (_, scorer) = current.as_mut().expect("set just above");
            if scorer.doc() < addr.doc_id {
                scorer.seek(addr.doc_id);
            }
            if scorer.doc() == addr.doc_id {
                scores[i] = scorer.score();
            }
        }
        Ok(scores)
    }
}

impl LexicalWriter<'_> {
    pub(crate) fn delete_file(&mut self, file_id: i64) {
        self.writer.delete_term(Term::from_field_u64(
            self.lexical.fields.file_id,
            file_id as u64,
        ));
    }

    pub(crate) fn add(&mut self, doc: LexicalDoc) -> Result<(), StoreError> {
        let f = self.lexical.fields;
        let mut d = TantivyDocument::new();
        d.add_u64(f.chunk_id, doc.chunk_id);
        d.add_u64(f.file_id, doc.file_id);
        d.add_pre_tokenized_text(f.text, pre_tokenized(&doc.text));
        d.add_pre_tokenized_text(f.path, pre_tokenized(&doc.path));
        if let Some(symbol) = &doc.symbol {
            d.add_pre_tokenized_text(f.symbol, pre_tokenized(symbol));
        }
        self.writer
            .add_document(d)
            .map_err(|e| lex_error(&self.lexical.dir, e))?;
        Ok(())
    }

    pub(crate) fn commit(mut self) -> Result<(), StoreError> {
        self.writer
            .commit()
            .map_err(|e| lex_error(&self.lexical.dir, e))?;
        self.writer
            .wait_merging_threads()
            .map_err(|e| lex_error(&self.lexical.dir, e))?;
        // This process sees what it committed (counts, searches) without reopening.
        self.lexical
            .reader
            .reload()
            .map_err(|e| lex_error(&self.lexical.dir, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
