//! The secret corpus (`tests/secrets/corpus.jsonl`): every positive's secret must disappear
//! under the rule of the expected kind, and no negative (placeholders, references, published
//! examples, look-alikes) may change. The same file is what `scripts/score_secret_scanners.py`
//! feeds to other scanners, so the figures in `docs/security.md` come from here.
//!
//! `tests/secrets/heldout.jsonl` holds entries of the same shapes that were set aside (every
//! third positive and every third negative, as they were written) before the rules for those
//! shapes were, and were scored once the rules were done; it is scored here too, with
//! [`HELDOUT_ALLOWED_MISSES`] as its tolerance, and is never a reason to change a rule.
//!
//! `tests/secrets/unseen.jsonl` holds sets written independently of the rules, each scored once
//! when it arrived (`docs/security.md`: sets 7 and 8 with rule set 4, set 9 with rule set 5,
//! set 10 with rule set 6, set 11 with rule set 7, set 12 with rule set 8, set 13 with rule set
//! 9, set 14 with rule set 10, set 15 with rule set 11, set 16 with rule set 12, set 17 with
//! rule set 13, sets 18 and 19 with rule set 15, set 20 with rule set 16, set 21 with rule set
//! 19, set 22 with rule set 27, set 23 with rule set 31, set 24 with rule set 35) and
//! kept as it was: their positives name no kind (`"secret"`: any rule may take them), and
//! [`UNSEEN_ALLOWED_FAILURES`] is those first scores. A set that has been scored is not a
//! reason to change a rule; shapes that keep getting through set after set are, with entries of
//! their own in `corpus.jsonl` (rule sets 5 to 16 took some that sets 6 to 19 showed).

use std::collections::BTreeMap;

use ctxpack_core::Masker;
use serde_json::Value;

/// One line of the corpus.
struct Entry {
    id: String,
    /// The kind expected to mask it; `None` for a negative.
    kind: Option<String>,
    text: String,
    /// The substring that must disappear (positives only).
    secret: Option<String>,
}

/// How many held-out entries may fail (a positive whose secret survives or is counted under
/// another kind, a negative that changes). Its first scores, each taken after the rules for
/// its shapes were written, were 19 of 19 positives and 0 of 10 negatives changed, then 3 of 3
/// and 0 of 2 for a second batch.
const HELDOUT_ALLOWED_MISSES: usize = 0;

fn corpus() -> Vec<Entry> {
    parse(include_str!("../secrets/corpus.jsonl"))
}

fn heldout() -> Vec<Entry> {
    parse(include_str!("../secrets/heldout.jsonl"))
}

/// How many entries of `unseen.jsonl` failed when each set was scored once on arrival: set 7
/// (rule set 4), 8 of its 111 secrets survived and 4 of its 57 near misses changed (2 of them
/// AWS's published example keys, masked on purpose); set 8 (rule set 4), 5 of 115 survived and
/// 2 of 58 changed; set 9 (rule set 5), 12 of 116 survived and none of 58 changed; set 10
/// (rule set 6), 21 of 108 survived and 1 of 53 changed (a Mapbox public `pk.` token); set 11
/// (rule set 7), 15 of 107 survived and none of 50 changed; set 12 (rule set 8), 16 of 117
/// survived and 1 of 56 changed (AWS's published example keys in a setup guide, masked on
/// purpose as in set 7); set 13 (rule set 9), 21 of 118 survived and 4 of 60 changed (two
/// bcrypt and Argon2 hashes, masked as `password_hash` by design, AWS's published examples, and a
/// `${API_PASS:?…}` message read as a value); set 14 (rule set 10), 17 of 115 survived and 1 of
/// 57 changed (AWS's published examples again); set 15 (rule set 11), 20 of 117 survived and 4
/// of 58 changed (three password hashes, masked by design, and AWS's published examples); set 16
/// (rule set 12), 16 of 115 survived and 4 of 57 changed (two password hashes, AWS's published
/// examples, a `SESSION_SECRET=generate-with-openssl-rand-hex-32` instruction, and a table cell
/// naming a vault entry, `1Password → "…"`); set 17 (rule set 13), 16 of 114 survived and 3 of
/// 58 changed (two files of password hashes, masked by design, and AWS's published examples);
/// set 18 (rule set 15), 18 of 115 survived and 3 of 58 changed (two password hashes and AWS's
/// published examples); set 19 (rule set 15), 23 of 115 survived and 1 of 61 changed (a Japanese
/// locale's strings naming a password and an API key); set 20 (rule set 16), 23 of 115 survived
/// and 2 of 60 changed (a German locale's labels for an API key and a token, and a log line's
/// `…/password status=204`, read as a password); set 21 (rule set 19), 20 of 115 survived and 3
/// of 60 changed (a `change-me-to-…` instruction, AWS's published examples and a Japanese
/// locale's "forgot your password?"); set 22 (rule set 27), 22 of 121 survived and 2 of 63
/// changed; set 23 (rule set 31), 20 of 147 survived and 3 of 73 changed (the `secret=…` path
/// inside an Ansible lookup, a `nextPageToken`, and a SealedSecret's ciphertext written without
/// the `Ag…` start the controller gives it); set 24 (rule set 35), 16 of 136 survived and 1
/// of 68 changed (a Jenkins credential's `{AQAAAB…}` ciphertext, masked on purpose as Maven's
/// braced ciphertext is); set 25 (rule set 41), 38 of 140 survived and 1 of 70 changed (AWS's
/// published examples).
const UNSEEN_ALLOWED_FAILURES: usize = 387;

fn unseen() -> Vec<Entry> {
    parse(include_str!("../secrets/unseen.jsonl"))
}

#[test]
fn an_unseen_set_scores_no_worse_than_on_arrival() {
    let entries = unseen();
    assert_eq!(entries.len(), 3392);
    let failures = failures(&entries);
    assert!(
        failures.len() <= UNSEEN_ALLOWED_FAILURES,
        "{} failures (allowed {UNSEEN_ALLOWED_FAILURES}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn parse(jsonl: &str) -> Vec<Entry> {
    jsonl
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("corpus lines are JSON objects");
            let field = |name: &str| v[name].as_str().map(str::to_owned);
            Entry {
                id: field("id").expect("every entry has an id"),
                kind: field("kind"),
                text: field("text").expect("every entry has a text"),
                secret: field("secret"),
            }
        })
        .collect()
}

#[test]
fn corpus_is_large_and_well_formed() {
    let entries = corpus();
    let held = heldout();
    assert!(held.len() >= 25, "{} held-out entries", held.len());
    for e in &held {
        if e.kind.is_some() {
            let secret = e.secret.as_deref().expect("positives name their secret");
            assert!(e.text.contains(secret), "{}: secret not in text", e.id);
        }
    }
    let positives = entries.iter().filter(|e| e.kind.is_some()).count();
    let negatives = entries.len() - positives;
    assert!(positives >= 100, "{positives} positives");
    assert!(negatives >= 50, "{negatives} negatives");
    let mut ids = BTreeMap::new();
    for e in &entries {
        *ids.entry(e.id.as_str()).or_insert(0) += 1;
        if e.kind.is_some() {
            let secret = e.secret.as_deref().expect("positives name their secret");
            assert!(e.text.contains(secret), "{}: secret not in text", e.id);
        }
    }
    for e in &held {
        *ids.entry(e.id.as_str()).or_insert(0) += 1;
    }
    let repeated: Vec<_> = ids.iter().filter(|(_, n)| **n > 1).collect();
    assert!(repeated.is_empty(), "repeated ids {repeated:?}");
    // Every rule is exercised by at least one positive.
    let kinds: Vec<&str> = entries.iter().filter_map(|e| e.kind.as_deref()).collect();
    for rule in Masker::new().rules() {
        assert!(
            kinds.contains(&rule.kind),
            "no corpus positive for {}",
            rule.kind
        );
    }
}

#[test]
fn every_positive_is_masked_and_no_negative_changes() {
    let failures = failures(&corpus());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn heldout_scores_within_its_tolerance() {
    let failures = failures(&heldout());
    let beyond_tolerance = failures.len().saturating_sub(HELDOUT_ALLOWED_MISSES);
    assert!(
        beyond_tolerance == 0,
        "{} held-out failures (allowed {HELDOUT_ALLOWED_MISSES}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// One line per entry that the masker gets wrong.
fn failures(entries: &[Entry]) -> Vec<String> {
    let masker = Masker::new();
    let mut failures = Vec::new();
    for e in entries {
        let (masked, counts) = masker.mask(&e.text);
        match (&e.kind, &e.secret) {
            (Some(kind), Some(secret)) => {
                if masked.contains(secret.as_str()) {
                    failures.push(format!("{}: secret survived in {masked:?}", e.id));
                } else if kind != "secret" && !counts.contains_key(kind) {
                    failures.push(format!("{}: expected {kind}, counted {counts:?}", e.id));
                }
            }
            _ => {
                if masked != e.text || !counts.is_empty() {
                    failures.push(format!("{}: negative changed to {masked:?}", e.id));
                }
            }
        }
        let (again, again_counts) = masker.mask(&masked);
        if again != masked || !again_counts.is_empty() {
            failures.push(format!("{}: not idempotent: {again:?}", e.id));
        }
    }
    failures
}
