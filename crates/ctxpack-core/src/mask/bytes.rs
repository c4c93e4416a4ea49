//! Keys written as bytes rather than text: an array of byte literals (`{ 0xf3, 0x38, … }`,
//! `new byte[] { 0x58, (byte) 0xFE, … }`) or a bytes literal of escapes (`b"\x77\x6b…"`)
//! under a key-named name, as firmware and small services embed their AES and HMAC keys.

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
        || ["dek", "kek", "hmac", "pepper"]
            .iter()
            .any(|w| lower.ends_with(w) && is_word_start(&name[..name.len() - w.len()], w));
    (named && random_bytes(m.as_str())).then(|| span(m))
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
