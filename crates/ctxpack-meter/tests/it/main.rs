//! Exact token counts against reference counts computed independently by OpenAI's `tiktoken`
//! (see `scripts/tiktoken_counts.py`), over a corpus of prose, code, CJK, emoji, combining
//! characters, odd whitespace and a 200 KB mixed file.

use std::collections::BTreeMap;
use std::path::Path;

use ctxpack_meter::Meter;

#[derive(serde::Deserialize)]
struct Expected {
    bytes: usize,
    chars: u64,
    cl100k: u64,
    o200k: u64,
}

#[test]
fn counts_match_tiktoken_on_the_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let expected: BTreeMap<String, Expected> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("expected.json is committed"),
    )
    .expect("expected.json is valid");
    assert!(expected.len() >= 10, "the corpus is complete");
    let mut mismatches = Vec::new();
    for (name, want) in &expected {
        let text = std::fs::read_to_string(dir.join(name)).expect("corpus file is UTF-8");
        assert_eq!(
            text.len(),
            want.bytes,
            "{name}: file changed since counts were made"
        );
        let got = [
            ("cl100k", Meter::Cl100k.count(&text), want.cl100k),
            ("o200k", Meter::O200k.count(&text), want.o200k),
            ("chars", Meter::Chars.count(&text), want.chars),
        ];
        for (meter, got, want) in got {
            if got != want {
                mismatches.push(format!("{name} {meter}: got {got}, tiktoken {want}"));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn every_corpus_file_has_reference_counts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let expected = std::fs::read_to_string(dir.join("expected.json")).expect("committed");
    for entry in std::fs::read_dir(&dir).expect("corpus dir") {
        let name = entry
            .expect("entry")
            .file_name()
            .into_string()
            .expect("UTF-8 name");
        if name.starts_with('.') || name == "expected.json" {
            continue;
        }
        assert!(
            expected.contains(&format!("\"{name}\"")),
            "{name} has no reference counts"
        );
    }
}

/// Published vectors of the two encodings (token ids from tiktoken's documentation and tests).
#[test]
fn published_vectors() {
    let cases: &[(&str, u64, u64)] = &[
        // text, cl100k, o200k
        ("hello world", 2, 2),
        ("", 0, 0),
        ("a", 1, 1),
    ];
    for &(text, cl100k, o200k) in cases {
        assert_eq!(Meter::Cl100k.count(text), cl100k, "cl100k of {text:?}");
        assert_eq!(Meter::O200k.count(text), o200k, "o200k of {text:?}");
    }
}
