//! Keys known by their shape rather than a vendor's prefix: written as bytes (an array of byte
//! literals, `{ 0xf3, 0x38, … }`, `new byte[] { 0x58, (byte) 0xFE, … }`, or a bytes literal of
//! escapes, `b"\x77\x6b…"`) under a key-named name, as firmware and small services embed their
//! AES and HMAC keys; and the keys that are no secret: public or test-mode keys, and a
//! known-answer test's counting key.

use super::*;

/// The fewest bytes a key has (AES-128).
const KEY_BYTES: usize = 16;

/// A key written as bytes ([`random_bytes`]) under a name that says it is a key, a salt, a
/// secret, a data- or key-encryption key or an HMAC's (`ota_key`, `kOtaImageKey`, `DEK`,
/// `MASTER_KEY`, `_KEY`). Key ids and public keys are not (`KEY_ID`, `public_key`), and nor is
/// a local `let` binding: a key a program carries is a constant or a static, and bytes bound
/// in a function are a test's vectors (`let ecdhe_secret = [0xe7, …]` in a TLS key schedule's
/// tests).
pub(super) fn byte_key(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let k = caps.name("k")?;
    let name = k.as_str();
    let m = caps.name("v").or_else(|| caps.name("w"))?;
    let line = hay[..k.start()].rfind('\n').map_or(0, |n| n + 1);
    let before = hay[line..k.start()].trim_end();
    if before.ends_with("let") || before.ends_with("let mut") {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let named = names_a_key(name)
        || secret_name(name).is_some()
        || ["dek", "kek", "hmac", "pepper"].iter().any(|w| {
            // `name` is ASCII (the expression's class), so its lowercase ends where it does.
            let at = name.len().saturating_sub(w.len());
            lower.ends_with(w) && is_word_start(&name[..at], &name[at..])
        });
    (named && random_bytes(m.as_str())).then(|| span(m))
}

/// Whether `value` is a secret under `name`: under a secret-named name a [`credible`] literal,
/// under a key-named one a random-looking value ([`random_key_value`]): a name/value pair's or
/// an XML setting's.
pub(super) fn pair_value_is_secret(name: &str, value: &str) -> bool {
    match secret_name(name) {
        Some(human) => credible(value, human),
        None => random_key_value(name, value),
    }
}

/// A random-looking value under a key-named name that no secret word names
/// (`SESSION_SIGNING_KEY`, `PayloadEncryptionKey`): a key only when it looks random, since
/// key-named settings also hold ids, names and paths ([`literal_is_secret`] leaves counting
/// and test keys out).
pub(super) fn random_key_value(name: &str, value: &str) -> bool {
    names_a_key(name)
        && literal_is_secret(value)
        && (looks_random(value) || is_random_printable_key(value))
}

/// A JSON Web Key's private member, when the text names a key type (`"kty"`) within 2 KiB of
/// it, as a JWK or JWKS does; the public members (`x`, `y`, `n`, `e`) are not matched.
pub(super) fn jwk_private(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let from = hay.floor_char_boundary(m.start().saturating_sub(2 << 10));
    let to = hay.ceil_char_boundary(m.end().saturating_add(2 << 10).min(hay.len()));
    (hay[from..to].contains("\"kty\"") && !is_placeholder(m.as_str())).then(|| span(m))
}

/// Whether the bytes written in `text`, as `0x…` literals or `\x…` escapes, look random: at
/// least [`KEY_BYTES`] of them, at least half of them distinct, not a run that counts up or
/// down (`0x00, 0x01, 0x02, …`, a placeholder's), and not text (`0x54, 0x68, 0x65, 0x20, …`,
/// "The quick brown fox" as a hash's test input): random bytes are printable ASCII about three
/// times in eight, so three in four or more is text.
fn random_bytes(text: &str) -> bool {
    let bytes: Vec<u8> = text
        .split(['x', 'X'])
        .skip(1)
        .filter_map(|rest| rest.get(..2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect();
    if bytes.len() < KEY_BYTES {
        return false;
    }
    let mut distinct = bytes.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let steps: Vec<u8> = bytes.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    let counting = steps.iter().all(|&s| s == steps[0]);
    let printable = bytes.iter().filter(|b| (0x20..0x7f).contains(*b)).count();
    distinct.len() * 2 >= bytes.len() && !counting && printable * 4 < bytes.len() * 3
}

/// Whether `value` is 16 or more bytes in hex that count up or down by one step
/// (`000102030405060708090a0b0c0d0e0f`, FIPS-197's example key): a known-answer test's, or a
/// placeholder's.
pub(super) fn counting_hex(value: &str) -> bool {
    if value.len() < 2 * KEY_BYTES || !value.len().is_multiple_of(2) || !value.is_ascii() {
        return false;
    }
    let bytes: Option<Vec<u8>> = (0..value.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&value[i..i + 2], 16).ok())
        .collect();
    let Some(bytes) = bytes else {
        return false;
    };
    let step = bytes[1].wrapping_sub(bytes[0]);
    step != 0 && bytes.windows(2).all(|w| w[1].wrapping_sub(w[0]) == step)
}

/// Keys that are public by design (Stripe's publishable keys, Mapbox's `pk.` tokens) or work
/// only in a vendor's test mode.
pub(super) const PUBLIC_OR_TEST_KEY_PREFIXES: &[&str] =
    &["sk_test_", "rk_test_", "pk_test_", "pk_live_", "pk."];

/// A public or test-mode key, or a known-answer test's counting key (`000102…0f`).
pub(super) fn is_public_or_test_key(value: &str) -> bool {
    PUBLIC_OR_TEST_KEY_PREFIXES
        .iter()
        .any(|p| value.starts_with(p))
        || counting_hex(value)
}

/// How often `value` changes between lower-case letters, upper-case letters and digits: a
/// generated string keeps changing (`y56edLOiDvyg6`, 7), a name's words and numbers change
/// a few times (`OAuth2Token`, 4; `X509CertPem`, 5).
pub(super) fn class_changes(value: &str) -> usize {
    let class = |b: u8| {
        (
            b.is_ascii_lowercase(),
            b.is_ascii_uppercase(),
            b.is_ascii_digit(),
        )
    };
    value
        .as_bytes()
        .windows(2)
        .filter(|w| class(w[0]) != class(w[1]))
        .count()
}
