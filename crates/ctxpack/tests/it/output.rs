//! Output that fits and reads well, on the real binary: the printed pack measures at most the
//! budget for every text format, meter and budget; a budget below the fixed part exits 2
//! naming the minimum; and the shape of grouped hits, the drop summary and an empty result.

use ctxpack_api::Meter;

use crate::pack::{Cli, Fixture, Script};

/// The text formats whose printed output the budget covers.
const FORMATS: [&str; 3] = ["text", "markdown", "xml"];

/// Every meter the binary has by default (cl100k is behind a Cargo feature).
const METERS: [&str; 4] = ["o200k", "words", "chars", "approx"];

/// The budgets of the matrix.
const BUDGETS: [u64; 5] = [50, 500, 2000, 8000, 32000];

const GOAL: &str = "how is the budget enforced when selecting hits";

/// A repository with enough matching code to fill a large budget: many files, each with
/// several functions (long enough to be chunks of their own), plus a README; indexed once for
/// this test binary and copied for each test.
fn repository() -> Fixture {
    let mut script = Script::new();
    for file in 0..24 {
        let mut text = format!("//! Budget module {file}: selecting hits under a budget.\n\n");
        text.push_str(&format!(
            "pub struct Budget{file} {{\n    remaining: u64,\n}}\n\n"
        ));
        text.push_str(&format!("impl Budget{file} {{\n"));
        for function in 0..6 {
            text.push_str(&format!(
                "    /// Admits hit {function} when its cost fits the remaining budget.\n    pub fn admit_{function}(&mut self, cost: u64) -> bool {{\n"
            ));
            for line in 0..12 {
                text.push_str(&format!(
                    "        let step_{line} = cost.saturating_add({line}); // the budget is enforced when selecting `hits`\n"
                ));
            }
            text.push_str(
                "        if cost > self.remaining {\n            return false;\n        }\n        self.remaining -= cost;\n        true\n    }\n\n",
            );
        }
        text.push_str("}\n");
        script.write(&format!("src/budget_{file:02}.rs"), &text);
    }
    // The code holds every word of the goal the README does: a word that only the README held
    // would make it the one strong candidate, and every chunk of code weak beside it.
    script.write(
        "README.md",
        "# Budgets\n\nHits are selected whole and the budget is enforced.\n",
    );
    script.commit("budgets").build().derived("indexed", |f| {
        let indexed = f.run(&["index"]);
        assert_eq!(indexed.code, 0, "{}", indexed.stderr);
    })
}

/// The minimum budget an exit-2 refusal names (on its error line; a hint may follow).
fn minimum_named(stderr: &str) -> u64 {
    let error = stderr.lines().next().unwrap_or_default();
    let tail = error
        .split("the minimum budget is ")
        .nth(1)
        .unwrap_or_else(|| panic!("no minimum named: {stderr}"));
    tail.trim_end()
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {tail}"))
}

fn pack(f: &Fixture, format: &str, meter: &str, budget: u64) -> crate::Run {
    let budget = budget.to_string();
    f.run(&[
        "pack",
        GOAL,
        "--format",
        format,
        "--meter",
        meter,
        "--budget",
        &budget,
        "--no-ledger",
    ])
}

/// A small budget goes to evidence: the header and markup of a 200-token pack leave room for
/// a hit in every format (it took 350 tokens before a pack's header was brief).
#[test]
fn a_200_token_pack_shows_a_hit_in_every_format() {
    let f = repository();
    for format in FORMATS {
        let run = pack(&f, format, "o200k", 200);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        assert!(Meter::O200k.count(&run.stdout) <= 200, "{format}");
        assert!(run.stdout.contains("src/"), "{format}: {}", run.stdout);
    }
}

#[test]
fn printed_output_fits_the_budget_in_every_format_and_meter() {
    let f = repository();
    let mut refused = 0;
    for format in FORMATS {
        for meter_name in METERS {
            let meter: Meter = meter_name.parse().expect("a meter");
            for budget in BUDGETS {
                let run = pack(&f, format, meter_name, budget);
                let what = format!("{format} {meter_name} {budget}");
                if run.code == 2 {
                    // Only a budget below the fixed part is refused, naming the minimum, and
                    // the minimum is enough.
                    let minimum = minimum_named(&run.stderr);
                    assert!(minimum > budget, "{what}: {}", run.stderr);
                    assert!(run.stderr.contains("--budget"), "{what}: {}", run.stderr);
                    let again = pack(&f, format, meter_name, minimum);
                    assert_eq!(again.code, 0, "{what} at {minimum}: {}", again.stderr);
                    assert!(meter.count(&again.stdout) <= minimum, "{what} at {minimum}");
                    refused += 1;
                    continue;
                }
                assert_eq!(run.code, 0, "{what}: {}", run.stderr);
                let printed = meter.count(&run.stdout);
                assert!(printed <= budget, "{what}: printed {printed}");
                if budget >= 8000 {
                    assert!(
                        run.stdout.contains("admit_"),
                        "{what}: no hit\n{}",
                        run.stdout
                    );
                }
            }
        }
    }
    // 50 characters hold no header in any format.
    assert!(refused >= FORMATS.len(), "{refused}");
}

#[test]
fn json_reports_content_and_rendered_tokens_of_the_markdown_pack() {
    let f = repository();
    let json = pack(&f, "json", "o200k", 2000);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let markdown = pack(&f, "markdown", "o200k", 2000);
    assert_eq!(value["renderedFormat"], "markdown");
    assert_eq!(value["contentTokens"], value["usedTokens"]);
    let rendered = value["renderedTokens"].as_u64().expect("a count");
    assert_eq!(rendered, Meter::O200k.count(&markdown.stdout));
    assert!(rendered <= 2000);
    assert!(value["usedTokens"].as_u64().expect("a count") < rendered);
    // The same hits as the Markdown shows, every one of them cited there.
    for hit in value["hits"].as_array().expect("hits") {
        let citation = hit["citation"].as_str().expect("a citation");
        let path = citation.split('#').next().expect("a path");
        assert!(markdown.stdout.contains(path), "{citation}");
    }
    // `both` fits its text part and reports it.
    let both = pack(&f, "both", "o200k", 2000);
    let (text, json) = both.stdout.split_once("\n{").expect("text, then JSON");
    let value: serde_json::Value = serde_json::from_str(&format!("{{{json}")).expect("JSON");
    assert_eq!(value["renderedFormat"], "text");
    assert_eq!(
        value["renderedTokens"].as_u64(),
        Some(Meter::O200k.count(&format!("{text}\n")))
    );
}

/// A repository whose goal matches two adjacent functions of one file and a function inside
/// an impl, for the grouped shape.
fn grouped_repository() -> (Fixture, String) {
    let f = Fixture::new();
    let mut text = String::from(
        "//! Ledger of packs.\n\npub struct Ledger {\n    records: Vec<String>,\n}\n\nimpl Ledger {\n",
    );
    for name in ["append_record", "replay_record"] {
        text.push_str(&format!(
            "    /// {name}: the ledger keeps every pack.\n    pub fn {name}(&mut self, record: String) {{\n"
        ));
        for line in 0..70 {
            text.push_str(&format!(
                "        let ledger_{line} = record.len() + {line}; // ledger record\n"
            ));
        }
        text.push_str("        self.records.push(record);\n    }\n\n");
    }
    text.push_str("}\n");
    f.write("src/ledger.rs", &text);
    f.write(
        "docs/ledger.md",
        "# Ledger\n\nEvery pack is appended to the ledger as a record: append a record, replay the ledger.\n",
    );
    let sha = f.commit("ledger");
    (f, sha)
}

fn scrub(out: &str, sha: &str) -> String {
    out.replace(sha, "<sha>").replace(&sha[..7], "<sha7>")
}

#[test]
fn grouped_output_shapes() {
    let (f, sha) = grouped_repository();
    for format in FORMATS {
        let run = f.run(&[
            "pack",
            "ledger record replay append",
            "--format",
            format,
            "--budget",
            "32000",
            "--no-ledger",
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        insta::assert_snapshot!(format!("grouped_{format}"), scrub(&run.stdout, &sha));
        if format == "text" {
            for line in run.stdout.lines().take_while(|l| !l.is_empty()) {
                assert!(
                    !["+", "-", "@@", "---"].iter().any(|p| line.starts_with(p)),
                    "a header line reads as a diff line: {line}"
                );
            }
        }
    }
}

#[test]
fn drop_summary_and_empty_result() {
    let f = repository();
    let sha = f.git(&["rev-parse", "HEAD"]);
    let run = pack(&f, "text", "words", 500);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary: String = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("dropped:"))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!("drop_summary", scrub(&summary, &sha));
    let listed = summary.lines().count();
    assert!(listed <= 7, "{summary}");
    // The full list stays in JSON.
    let json: serde_json::Value =
        serde_json::from_str(&pack(&f, "json", "words", 500).stdout).expect("JSON");
    assert!(json["dropped"].as_array().expect("dropped").len() > 5);

    let empty = f.run(&["pack", "zyzzyva quokka", "--budget", "2000", "--no-ledger"]);
    assert_eq!(empty.code, 0, "{}", empty.stderr);
    insta::assert_snapshot!("empty_result", scrub(&empty.stdout, &sha));
    let markdown = f.run(&[
        "pack",
        "zyzzyva quokka",
        "--format",
        "markdown",
        "--no-ledger",
    ]);
    assert!(
        markdown
            .stdout
            .contains("**No hits:** nothing matched the goal"),
        "{}",
        markdown.stdout
    );
}

/// The full view adds the dropped candidates it names to the printed output, so it names as
/// many as a tenth of the budget holds (one per 200 units) and counts the rest: a pack whose
/// pool dropped far more than that still fits the budget it was asked for, in every format.
#[test]
fn the_full_view_fits_the_budget_however_many_were_dropped() {
    let f = repository();
    for format in ["text", "markdown", "xml"] {
        let run = f.run(&[
            "pack",
            GOAL,
            "--view",
            "full",
            "--format",
            format,
            "--budget",
            "2000",
            "--no-ledger",
        ]);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        let used = Meter::O200k.count(&run.stdout);
        assert!(used <= 2000, "{format}: {used} tokens");
        let counted = match format {
            "xml" => "unlisted=\"",
            _ => "more (the JSON output lists every one)",
        };
        assert!(run.stdout.contains(counted), "{format}: {}", run.stdout);
    }
    let json: serde_json::Value = serde_json::from_str(
        &f.run(&[
            "pack",
            GOAL,
            "--view",
            "full",
            "--format",
            "json",
            "--budget",
            "2000",
            "--no-ledger",
        ])
        .stdout,
    )
    .expect("JSON");
    let dropped = json["dropped"].as_array().expect("dropped").len();
    assert!(
        dropped > 2000 / 200,
        "only {dropped} dropped: the test needs more"
    );
}
