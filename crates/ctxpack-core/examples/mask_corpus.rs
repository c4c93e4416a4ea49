//! Masks every entry of a secret corpus (`tests/secrets/corpus.jsonl`) and prints one line per
//! entry: `id<TAB>positive|negative<TAB>masked|unchanged`, where a positive counts as masked
//! when its `secret` no longer occurs. `scripts/score_secret_scanners.py` reads this output to
//! put ctxpack's score beside other scanners'; it is run by hand, never by the test suite.
//!
//! ```text
//! cargo run --release -p ctxpack-core --example mask_corpus -- crates/ctxpack-core/tests/secrets/corpus.jsonl
//! ```

// A command-line report: printing is its purpose.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use ctxpack_core::Masker;
use serde_json::Value;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: mask_corpus CORPUS.jsonl");
        std::process::exit(2);
    };
    let corpus = std::fs::read_to_string(&path).expect("the corpus file is readable");
    let masker = Masker::new();
    for line in corpus.lines().filter(|l| !l.trim().is_empty()) {
        let entry: Value = serde_json::from_str(line).expect("corpus lines are JSON objects");
        let id = entry["id"].as_str().expect("every entry has an id");
        let text = entry["text"].as_str().expect("every entry has a text");
        let (masked, _) = masker.mask(text);
        let (role, hit) = match entry["secret"].as_str() {
            Some(secret) if !entry["kind"].is_null() => ("positive", !masked.contains(secret)),
            _ => ("negative", masked != text),
        };
        let outcome = if hit { "masked" } else { "unchanged" };
        println!("{id}\t{role}\t{outcome}");
    }
}
