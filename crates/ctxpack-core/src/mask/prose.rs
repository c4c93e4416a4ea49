//! Credentials written in prose (READMEs, runbooks, e-mails, notes): prose quotes names,
//! commands and code as often as values, so what is taken must read as a credential.

use super::*;

/// A credential in prose (a README, a runbook, an e-mail): a backquoted value after "password"
/// or a user in backquotes, a table row whose label is secret-named, "the key is …". Prose
/// quotes names, commands and code as often as values, so the value must look generated: at
/// least three of upper case, lower case, digits and punctuation, no brackets, slashes or `$`,
/// and not words joined by separators; "the key is …" wants a random-looking value.
pub(super) fn prose_credential(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    if let Some(d) = caps.name("d") {
        let v = d.as_str();
        return (looks_random(v) && !is_placeholder(v)).then(|| span(d));
    }
    if let Some(c) = caps.name("c") {
        let label = caps.name("ck")?.as_str().trim();
        let lower = label.to_ascii_lowercase();
        let human = secret_name(&label.replace(' ', "_")).or_else(|| {
            (lower.contains("pre-shared key") || lower.contains("preshared key")).then_some(true)
        })?;
        let v = c.as_str();
        // A chosen passphrase of words (`Cobalt!Larch!Glacier7505`) is at home in a table
        // cell labelled as one; without punctuation, words are a product's name (`1Password`).
        let punctuated = v.bytes().any(|b| b.is_ascii_punctuation());
        let ok = credible(v, human) && prose_value(v) && (punctuated || !is_camel_words(v));
        return ok.then(|| span(c));
    }
    let m = ["a", "b", "e", "f"].iter().find_map(|g| caps.name(g))?;
    // A sentence's own punctuation after an unquoted value is not part of it.
    let m_end = m.start() + m.as_str().trim_end_matches(['.', ',', ';', ':', ')']).len();
    if caps.name("b").is_some() {
        // A pair of backquoted names (`src` / `dst`) is a login only where the line says so.
        let start = caps.get(0)?.start();
        let line = hay[..start]
            .rsplit('\n')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if !LOGIN_WORDS.iter().any(|w| line.contains(w)) {
            return None;
        }
    }
    let v = &hay[m.start()..m_end];
    // A chosen password of words (`zephyr*Bramble6`) holds a digit and a symbol no
    // identifier has; without them, words are names.
    let chosen = v.bytes().any(|b| b.is_ascii_digit())
        && v.bytes()
            .any(|b| b.is_ascii_punctuation() && !matches!(b, b'_' | b'-' | b'.'));
    let ok = prose_value(v) && (chosen || (!is_word_list(v) && !is_camel_words(v)));
    ok.then_some((m.start(), m_end))
}

/// Words before a `user` / `password` pair that say it is one.
const LOGIN_WORDS: &[&str] = &[
    "login",
    "log in",
    "sign in",
    "credential",
    "user",
    "account",
];

/// A value written into prose that can be a credential; see [`prose_credential`].
fn prose_value(v: &str) -> bool {
    let classes = [
        v.bytes().any(|b| b.is_ascii_uppercase()),
        v.bytes().any(|b| b.is_ascii_lowercase()),
        v.bytes().any(|b| b.is_ascii_digit()),
        v.bytes().any(|b| b.is_ascii_punctuation()),
    ];
    v.chars().count() >= 8
        && classes.iter().filter(|&&c| c).count() >= 3
        && !v.contains([
            '(', ')', '[', ']', '{', '}', '<', '>', '/', '\\', '$', ',', ';',
        ])
        && !v.contains("::")
        && !v.contains("://")
        && !is_placeholder(v)
        && !is_credential_name(v)
        && !is_path(v)
}
