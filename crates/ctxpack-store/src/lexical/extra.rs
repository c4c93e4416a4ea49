//! Chunks searched beside the index without being in it (a working tree's files), analysed
//! as the index analyses what it holds.

use std::collections::HashMap;

use tantivy::fieldnorm::FieldNormReader;

use super::analyze;

/// A chunk searched beside the index without being in it (a file of the working tree): the
/// same fields, analysed the same way, under an id the caller chooses (negative, so it never
/// meets a stored chunk's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraDoc {
    /// The id hits report for it.
    pub id: i64,
    /// The file's path.
    pub path: String,
    /// The chunk's first line (1-based): with the path, what orders equal scores.
    pub start_line: u32,
    /// The chunk's last line.
    pub end_line: u32,
    /// The symbol the chunk names, if any.
    pub symbol: Option<String>,
    /// The (masked) chunk text.
    pub text: String,
}

/// One field of an extra document: its term frequencies and its length as the index would
/// record it (lengths are stored rounded to one of 256 values; extra documents are rounded
/// alike so both kinds are scored on one scale).
pub(super) struct AnalyzedField {
    pub(super) freqs: HashMap<String, u32>,
    pub(super) length: u32,
}

/// An extra document's three fields, analysed.
pub(super) struct Analyzed {
    pub(super) id: i64,
    pub(super) fields: [AnalyzedField; 3],
}

impl Analyzed {
    pub(super) fn new(doc: &ExtraDoc) -> Analyzed {
        let field = |text: &str| {
            let terms = analyze(text);
            let length = u32::try_from(terms.len()).unwrap_or(u32::MAX);
            let mut freqs: HashMap<String, u32> = HashMap::new();
            for term in terms {
                *freqs.entry(term).or_default() += 1;
            }
            AnalyzedField {
                freqs,
                length: FieldNormReader::id_to_fieldnorm(FieldNormReader::fieldnorm_to_id(length)),
            }
        };
        Analyzed {
            id: doc.id,
            fields: [
                field(&doc.text),
                field(&doc.path),
                field(doc.symbol.as_deref().unwrap_or("")),
            ],
        }
    }
}
