//! Exact token counts against reference counts computed independently by OpenAI's `tiktoken`
//! (see `scripts/tiktoken_counts.py`), over a corpus of prose, code, CJK, emoji, combining
//! characters, odd whitespace and a 200 KB mixed file.
//!
//! The `cl100k` counts are checked in builds with the `cl100k` feature (the default).

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
            (Meter::Cl100k, want.cl100k),
            (Meter::O200k, want.o200k),
            (Meter::Chars, want.chars),
        ];
        for (meter, want) in got {
            let Ok(got) = meter.try_count(&text) else {
                continue;
            };
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
        if Meter::Cl100k.is_built() {
            assert_eq!(Meter::Cl100k.count(text), cl100k, "cl100k of {text:?}");
        }
        assert_eq!(Meter::O200k.count(text), o200k, "o200k of {text:?}");
    }
}

/// Every meter this build counts in is checked against the reference above; the name of a
/// meter left out still round-trips through serde, so records written by a build with it
/// stay readable.
#[test]
fn the_o200k_meter_is_always_built_and_cl100k_only_with_its_feature() {
    assert!(Meter::O200k.is_built());
    assert_eq!(Meter::Cl100k.is_built(), cfg!(feature = "cl100k"));
    let read: Meter = serde_json::from_str("\"cl100k\"").expect("every name deserializes");
    assert_eq!(read, Meter::Cl100k);
    assert_eq!(read.ensure_built().is_ok(), cfg!(feature = "cl100k"));
}

mod differential {
    //! Counts against an independent implementation of the same encodings (the `bpe-openai`
    //! encoder, itself tested against tiktoken), on generated text built to hit the edges of
    //! the pre-tokenizing patterns: case-folded contraction letters (`ſ`, `K`), combining
    //! marks, title case, digits of several scripts, every kind of line and space separator,
    //! and runs long enough to take the long-piece path.

    use ctxpack_meter::Meter;
    use proptest::prelude::*;

    const ALPHABET: &[&str] = &[
        "a", "Z", "e", "s", "S", "t", "ſ", "K", "'", "’", "d", "ll", "re", "ve", "m", "é",
        "e\u{301}", "\u{301}", "ǅ", "ʰ", "日", "本", "の", "한", "й", "Ж", "ß", "0", "7", "٣", "Ⅻ",
        "½", " ", "  ", "\t", "\n", "\r\n", "\r", "\u{a0}", "\u{2028}", "\u{3000}", "\u{200b}",
        "/", "//", "-", "=", "{", "}", "(", ")", ";", ".", ",", "\"", "#", "`", "😀", "👍🏽",
        "\u{feff}", "\u{0}", "fn", " the", "ing", "http", "://", "<", ">",
    ];

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => proptest::collection::vec(proptest::sample::select(ALPHABET), 0..120)
                .prop_map(|parts| parts.concat()),
            1 => (proptest::sample::select(ALPHABET), 1..200usize, proptest::sample::select(ALPHABET))
                .prop_map(|(run, n, tail)| format!("{}{tail}", run.repeat(n))),
            1 => any::<String>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn o200k_counts_like_the_reference(text in text()) {
            prop_assert_eq!(Meter::O200k.count(&text), bpe_openai::o200k_base().count(text.as_str()) as u64);
        }

        #[cfg(feature = "cl100k")]
        #[test]
        fn cl100k_counts_like_the_reference(text in text()) {
            prop_assert_eq!(Meter::Cl100k.count(&text), bpe_openai::cl100k_base().count(text.as_str()) as u64);
        }

        /// Any run of any text's lines costs from its line counts what counting it gives.
        #[test]
        fn a_run_costs_what_counting_it_gives(text in text(), first in 0..64usize, count in 1..64usize) {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let first = first.min(lines.len());
            let run = lines[first..(first + count).min(lines.len())].concat();
            let counts = Meter::O200k.count_lines(&text).expect("an encoding");
            prop_assert_eq!(Meter::O200k.count_run(&run, first, &counts), Meter::O200k.count(&run));
        }
    }
}

/// Texts whose pieces span line breaks in every way the encodings' patterns allow: blank
/// lines, whitespace before and after breaks, punctuation that takes the break (and a `/`
/// after it), CRLF and lone CR, and lines of nothing but spaces.
const LINE_CASES: &[&str] = &[
    "fn a() {\n    b();\n}\n\n\n// c\n  \n\t\td\n",
    "x = 1;\n}\n/// doc\n};\n//\n/\n",
    "a  \n  b\n \n\n  \r\n\r\nc\rd\n",
    "  leading\ntrailing  \n   \n",
    "no newline at the end",
    "\n\n\n",
    "",
    "é\nüñ\n日本\n😀 \n",
];

/// A run of lines costed from the counts at its ends is the count of the run's own text,
/// wherever the counts say anything, in both encodings, over the corpus and texts built to
/// break pieces across lines; and the counts say something for most runs of real code. Every
/// run costed by `count_run` (the counts where they tell it, else its ends counted) is too.
#[test]
fn runs_of_lines_cost_what_counting_them_gives() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut texts: Vec<String> = LINE_CASES.iter().map(|t| (*t).to_owned()).collect();
    for entry in std::fs::read_dir(&dir).expect("the corpus") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("corpus file is UTF-8");
        // The first 300 lines of each file: every run of them is checked.
        texts.push(text.split_inclusive('\n').take(300).collect());
    }
    let meters: &[Meter] = if cfg!(feature = "cl100k") {
        &[Meter::O200k, Meter::Cl100k]
    } else {
        &[Meter::O200k]
    };
    for &meter in meters {
        let (mut known, mut runs) = (0usize, 0usize);
        for text in &texts {
            let counts = meter.count_lines(text).expect("an encoding");
            assert_eq!(counts.window(0, counts.lines()), Some(meter.count(text)));
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            assert_eq!(counts.lines(), lines.len(), "{text:?}");
            assert_eq!(
                ctxpack_meter::LineCounts::from_bytes(&counts.to_bytes()),
                Some(counts.clone())
            );
            for first in 0..lines.len() {
                for count in 1..=(lines.len() - first).min(80) {
                    runs += 1;
                    let run: String = lines[first..first + count].concat();
                    let counted = meter.count(&run);
                    if let Some(cost) = counts.window(first, count) {
                        known += 1;
                        assert_eq!(cost, counted, "{meter}: {run:?}");
                    }
                    assert_eq!(
                        meter.count_run(&run, first, &counts),
                        counted,
                        "{meter}: {run:?} from line {first}"
                    );
                }
            }
            assert_eq!(counts.window(0, lines.len() + 1), None);
        }
        assert!(known * 2 > runs, "{meter}: {known} of {runs} runs known");
    }
}

/// Stored counts are read back only as written: damaged or hostile bytes are refused.
#[test]
fn damaged_line_counts_are_refused() {
    use ctxpack_meter::LineCounts;
    let counts = Meter::O200k.count_lines("a\nb\n").expect("o200k");
    let bytes = counts.to_bytes();
    assert_eq!(LineCounts::from_bytes(&bytes), Some(counts));
    for bad in [
        &b""[..],
        &[0x80],                               // an unfinished number
        &[0x01, 0x00],                         // no total at the end
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // too large
    ] {
        assert_eq!(LineCounts::from_bytes(bad), None, "{bad:?}");
    }
    assert_eq!(LineCounts::from_bytes(&vec![1; (1 << 16) + 2]), None);
}
