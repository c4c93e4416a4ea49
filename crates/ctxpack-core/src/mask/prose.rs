//! Credentials written in prose (READMEs, runbooks, e-mails, notes): prose quotes names,
//! commands and code as often as values, so what is taken must read as a credential.

use super::*;

/// A credential in prose (a README, a runbook, an e-mail): a backquoted value after "password"
/// or "pw", an unquoted one a password "is", a `user` / `…` pair on a login line, "the key is
/// …". Prose quotes names, commands and code as often as values, so the value must read as a
/// credential: at least three of upper case, lower case, digits and punctuation, no brackets,
/// slashes or `$`, and not words unless they hold a digit and a symbol; "the key is …" wants a
/// random-looking or chosen value. (Tables are `tables.rs`'s.)
pub(super) fn prose_credential(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    if let Some(d) = caps.name("d") {
        // "The key is …": random, or a chosen password (`River4432!juniper`).
        let m_end = d.start() + d.as_str().trim_end_matches(['.', ',', ';', ':', ')']).len();
        let v = &hay[d.start()..m_end];
        let ok = !is_placeholder(v) && (looks_random(v) || (prose_value(v) && is_chosen(v)));
        return ok.then_some((d.start(), m_end));
    }
    let m = ["a", "b", "e", "f"].iter().find_map(|g| caps.name(g))?;
    // A sentence's own punctuation after an unquoted value is not part of it.
    let m_end = m.start() + m.as_str().trim_end_matches(['.', ',', ';', ':', ')']).len();
    if caps.name("b").is_some() {
        // A pair of backquoted names (`src` / `dst`) is a login only where the line says so;
        // the line is read no more than 4 KiB back, so a long line of pairs costs a bounded
        // amount per pair.
        let start = caps.get(0)?.start();
        let from = hay.floor_char_boundary(start.saturating_sub(4 << 10));
        let line = hay[from..start]
            .rsplit('\n')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if !LOGIN_WORDS.iter().any(|w| line.contains(w)) {
            return None;
        }
    }
    // `POST /api/v1/users/42/password status=204`: a path's segment, not a word of prose.
    if caps.name("e").is_some() && hay[..caps.get(0)?.start()].ends_with('/') {
        return None;
    }
    let v = &hay[m.start()..m_end];
    // After "login/pass: user /" or right after "password" in quotes, words joined with a digit
    // are a passphrase (`Sunset-maple-cobalt6743`), not a name.
    let labelled = (caps.name("f").is_some() || caps.name("a").is_some())
        && v.bytes().any(|b| b.is_ascii_digit());
    let ok = prose_value(v) && (reads_as_credential(v) || labelled);
    ok.then_some((m.start(), m_end))
}

/// A `user / password` pair alone at a line's end (a chat's answer, `[09:42] kenji: admin /
/// …`), when the 400 bytes before it ask for a login or credentials: the pair is a login only
/// where the text says so, and the value must read as a credential, or as a chosen one of
/// words with a digit.
pub(super) fn answered_login(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let m = caps.name("f")?;
    let start = caps.get(0)?.start();
    // The pair ends a line that starts with at most a chat's prefix (`[09:42] kenji:`), no path.
    let line = hay[..start].rfind('\n').map_or(0, |n| n + 1);
    if start - line > 60 || hay[line..start].contains('/') {
        return None;
    }
    let from = hay.floor_char_boundary(start.saturating_sub(400));
    let before = hay[from..start].to_ascii_lowercase();
    if !ASKED_FOR_LOGIN.iter().any(|w| before.contains(w)) {
        return None;
    }
    let end = m.start() + m.as_str().trim_end_matches(['.', ',', ';', ':', ')']).len();
    let v = &hay[m.start()..end];
    let ok = prose_value(v) && (reads_as_credential(v) || v.bytes().any(|b| b.is_ascii_digit()));
    ok.then_some((m.start(), end))
}

/// A chosen password of words (`zephyr*Bramble6`) holds a digit and a symbol no identifier
/// has.
fn is_chosen(v: &str) -> bool {
    v.bytes().any(|b| b.is_ascii_digit())
        && v.bytes()
            .any(|b| b.is_ascii_punctuation() && !matches!(b, b'_' | b'-' | b'.'))
}

/// Chosen, or not words at all; words without a digit and a symbol are names.
pub(super) fn reads_as_credential(v: &str) -> bool {
    is_chosen(v) || (!is_word_list(v) && !is_camel_words(v))
}

/// Words of a question a `user / password` answer follows (`anyone know the login for …?`).
const ASKED_FOR_LOGIN: &[&str] = &["login", "log in", "creds", "credential", "password"];

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
pub(super) fn prose_value(v: &str) -> bool {
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
