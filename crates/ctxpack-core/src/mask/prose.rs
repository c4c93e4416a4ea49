//! Credentials written in prose (READMEs, runbooks, e-mails, notes): prose quotes names,
//! commands and code as often as values, so what is taken must read as a credential.

use super::*;

/// A credential in prose (a README, a runbook, an e-mail): a backquoted value after "password"
/// or "pw", an unquoted one a password "is", a `user` / `…` pair on a login line, "the key is
/// …". Prose quotes names, commands and code as often as values, so the value must read as a
/// credential: at least three of upper case, lower case, digits and punctuation, no brackets,
/// slashes or `$`, and not words unless they hold a digit and a symbol; "the key is …" wants a
/// random-looking or chosen value. (Tables are [`table_cell`]'s.)
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

/// A chosen password of words (`zephyr*Bramble6`) holds a digit and a symbol no identifier
/// has.
fn is_chosen(v: &str) -> bool {
    v.bytes().any(|b| b.is_ascii_digit())
        && v.bytes()
            .any(|b| b.is_ascii_punctuation() && !matches!(b, b'_' | b'-' | b'.'))
}

/// Chosen, or not words at all; words without a digit and a symbol are names.
fn reads_as_credential(v: &str) -> bool {
    is_chosen(v) || (!is_word_list(v) && !is_camel_words(v))
}

/// A value cell of a Markdown table: the second cell of a row whose first is a secret label
/// (`| Password | … |`, `| Pre-shared key | … |`), or a cell under a column whose header ends in
/// a secret word (`| env | user | DB password |`), with no space in it. The table's header is the
/// first of the row's run of `|` lines, looked for no more than 4 KiB back (each row looks, so a
/// long table costs at most that per row); the header and the separator row are not values.
pub(super) fn table_cell(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let row = caps.get(0)?;
    if let Some(span) = labelled_row(row) {
        return Some(span);
    }
    let from = hay.floor_char_boundary(row.start().saturating_sub(4 << 10));
    let mut header = None;
    for line in hay[from..row.start()].lines().rev() {
        if !line.trim_start().starts_with('|') {
            break;
        }
        header = Some(line);
    }
    let header = header?;
    let cells = |line: &str| -> Vec<(usize, usize)> {
        // Each cell's span within `line`, between its pipes.
        let mut spans = Vec::new();
        let mut start = None;
        for (i, b) in line.bytes().enumerate() {
            if b == b'|' {
                if let Some(s) = start {
                    spans.push((s, i));
                }
                start = Some(i + 1);
            }
        }
        spans
    };
    // Confluence heads its tables with `||` between cells (`||Host||Password||`), its rows
    // with `|`: there a run of pipes is one separator.
    let confluence = header.contains("||");
    let header_cells: Vec<(usize, usize)> = cells(header)
        .into_iter()
        .filter(|&(a, b)| !(confluence && a == b))
        .collect();
    let column = header_cells.iter().position(|&(a, b)| {
        let name = header[a..b].trim().trim_matches('*').to_ascii_lowercase();
        // The cell's last word (`DB password`), or the two of `API key`.
        let last = name.rsplit(' ').next().unwrap_or("");
        TABLE_SECRET_HEADERS.contains(&last) || name.ends_with("api key")
    })?;
    let line = row.as_str();
    let (a, b) = *cells(line).get(column)?;
    let cell = &line[a..b];
    let value = unmarked(cell.trim());
    // A cell with spaces is a sentence or a pointer (`1Password → "ops-bot"`), not a value.
    if value.is_empty() || value.contains(char::is_whitespace) {
        return None;
    }
    let offset = row.start() + a + cell.find(value)?;
    let ok = prose_value(value) && reads_as_credential(value);
    ok.then_some((offset, offset + value.len()))
}

/// `| Password | … |`: a row whose first cell is a secret label and whose second holds the
/// value. A chosen passphrase of words (`Cobalt!Larch!Glacier7505`) is at home in a cell
/// labelled as one; without punctuation, words are a product's name (`1Password`).
fn labelled_row(row: regex::Match<'_>) -> Option<(usize, usize)> {
    let line = row.as_str();
    let mut cells = line.trim().trim_matches('|').split('|');
    let label = cells.next()?.trim().trim_matches('*').trim();
    let cell = cells.next()?;
    let lower = label.to_ascii_lowercase();
    let human = secret_name(&label.replace(' ', "_")).or_else(|| {
        (lower.ends_with("pre-shared key") || lower.ends_with("preshared key")).then_some(true)
    })?;
    let v = unmarked(cell.trim());
    let punctuated = v.bytes().any(|b| b.is_ascii_punctuation());
    let ok = !v.is_empty()
        && !v.contains(char::is_whitespace)
        && credible(v, human)
        && prose_value(v)
        && (punctuated || !is_camel_words(v));
    if !ok {
        return None;
    }
    // The cell's place in the line: the second `|`-separated cell holds `v` once trimmed.
    let second = line.match_indices('|').nth(1)?.0 + 1;
    let at = second + line[second..].find(v)?;
    Some((row.start() + at, row.start() + at + v.len()))
}

/// A CSV row's value under a column whose header names a secret (`system,url,username,password`):
/// the header is the text's first line, so only a text read from its start is looked at, and
/// a row is read only when it has the header's number of fields and no quotes (a quoted field
/// may hold commas).
pub(super) fn csv_cell(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let row = caps.get(0)?;
    // The first line ends within 4 KiB, so each row reads a bounded header.
    let head = &hay[..hay.floor_char_boundary(hay.len().min(4 << 10))];
    let header = head.split_once('\n')?.0.trim_end_matches('\r');
    if row.start() == 0 || header.contains('"') {
        return None;
    }
    let names: Vec<&str> = header.split(',').collect();
    let column = names.iter().position(|name| {
        let name = name.trim().to_ascii_lowercase();
        TABLE_SECRET_HEADERS.contains(&name.as_str()) || secret_name(&name).is_some()
    })?;
    let line = row.as_str().trim_end_matches('\r');
    let fields: Vec<&str> = line.split(',').collect();
    if fields.len() != names.len() {
        return None;
    }
    let value = fields[column].trim();
    if value.is_empty() || value.contains(char::is_whitespace) {
        return None;
    }
    let ok = prose_value(value) && reads_as_credential(value);
    let before: usize = fields[..column].iter().map(|f| f.len() + 1).sum();
    let offset = row.start() + before + fields[column].find(value)?;
    ok.then_some((offset, offset + value.len()))
}

/// A cell's value without the code markup around it: Markdown's backquotes, Textile's `@…@`
/// (a Maven placeholder, `@db.password@`, is then a name and never a value).
fn unmarked(cell: &str) -> &str {
    let v = cell.trim_matches('`');
    match v.strip_prefix('@').and_then(|v| v.strip_suffix('@')) {
        Some(inner) if !inner.is_empty() => inner,
        _ => v,
    }
}

/// Last words of header cells that name a column of secrets.
const TABLE_SECRET_HEADERS: &[&str] = &[
    "password",
    "pass",
    "passwd",
    "pwd",
    "secret",
    "token",
    "passphrase",
    "credential",
    "credentials",
];

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
