//! Credentials written in prose (READMEs, runbooks, e-mails, notes): prose quotes names,
//! commands and code as often as values, so what is taken must read as a credential.

use super::rules::foreign_password_word;
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
    if !["login", "log in", "creds", "credential", "password"]
        .iter()
        .any(|w| before.contains(w))
    {
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
fn reads_as_credential(v: &str) -> bool {
    is_chosen(v) || (!is_word_list(v) && !is_camel_words(v))
}

/// A value cell of a Markdown table: the second cell of a row whose first is a secret label
/// (`| Password | … |`, `| Pre-shared key | … |`, `| Пароль | … |`), or a cell under a column
/// whose header names a secret ([`secret_column`]: `| env | user | DB password |`), with no
/// space in it. The table's header is the first of the row's run of `|` lines, looked for no
/// more than 4 KiB back (each row looks, so a long table costs at most that per row); the
/// header and the separator row are not values.
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
    let (column, kind) = header_cells
        .iter()
        .enumerate()
        .find_map(|(i, &(a, b))| secret_column(&header[a..b]).map(|kind| (i, kind)))?;
    let line = row.as_str();
    let (a, b) = *cells(line).get(column)?;
    column_value(row.start() + a, &line[a..b], kind)
}

/// What the cells under a table's secret-named column hold.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Column {
    /// Passwords: people choose them, so words joined with a digit (`VortexBasalt7389`,
    /// `Nutmeg.cactus.thunder12`) are one.
    Password,
    /// Tokens, keys and other secrets: the value must read as a credential.
    Secret,
}

/// The column a header cell names, by its last word (`DB password`, `Admin passcode`, `API
/// key`, `Secret`) or the word for password in another language (`Wachtwoord`, `Пароль`).
/// Emphasis and code marks around the name are not part of it.
fn secret_column(header: &str) -> Option<Column> {
    let name = header
        .trim()
        .trim_matches(['*', '_', '\'', '`', ':'])
        .trim()
        .to_lowercase();
    let last = name.rsplit([' ', '_', '-']).next().unwrap_or("");
    if PASSWORD_HEADERS.contains(&last) || foreign_password_header(&name) {
        return Some(Column::Password);
    }
    let secret = TABLE_SECRET_HEADERS.contains(&last)
        || ["api key", "api_key", "apikey", "api token"]
            .iter()
            .any(|w| name.ends_with(w));
    secret.then_some(Column::Secret)
}

/// Whether a lowercased header cell ends in the word for password in another language.
fn foreign_password_header(name: &str) -> bool {
    static FOREIGN: OnceLock<Regex> = OnceLock::new();
    FOREIGN
        .get_or_init(|| {
            Regex::new(concat!(foreign_password_word!(), r"\z"))
                .expect("the foreign password words are a constant covered by tests")
        })
        .is_match(name)
}

/// The value of a cell under a secret-named column (`cell` starts at byte `at` of the text),
/// once its marks are taken off ([`unmarked`]): no space in it (a cell with spaces is a
/// sentence or a pointer, `1Password → "ops-bot"`, `see Vault`), and reading as a credential.
fn column_value(at: usize, cell: &str, kind: Column) -> Option<(usize, usize)> {
    let value = unmarked(cell.trim());
    if value.is_empty() || value.contains(char::is_whitespace) {
        return None;
    }
    // An `&` in HTML is written `&amp;`: judged as the password it stands for, masked as written.
    let read = value.replace("&amp;", "&");
    // Words joined with a digit under a password column are a chosen password, unless they
    // name where one is kept (`see-1Password`, `vault-entry-2`).
    let lower = read.to_ascii_lowercase();
    let chosen = kind == Column::Password
        && read.bytes().any(|b| b.is_ascii_digit())
        && !["pass", "pwd", "secret", "token", "vault", "key"]
            .iter()
            .any(|w| lower.contains(w));
    let ok = prose_value(&read) && (reads_as_credential(&read) || chosen);
    let offset = at + cell.find(value)?;
    ok.then_some((offset, offset + value.len()))
}

/// A value cell of a MediaWiki table under a secret-named column: the table's header line
/// (`! Device !! IP !! Login !! Password`) is the nearest line above the row (`| sw-01 ||
/// 10.0.0.2 || admin || …`) that opens with `!`, past the `|-` lines and rows between them,
/// looked for no more than 4 KiB back. A cell's attributes (`style="…" | value`) are not its
/// value.
pub(super) fn wiki_table_cell(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let row = caps.get(0)?;
    let from = hay.floor_char_boundary(row.start().saturating_sub(4 << 10));
    let mut header = None;
    for line in hay[from..row.start()].lines().rev() {
        let line = line.trim_start();
        if let Some(cells) = line.strip_prefix('!') {
            header = Some(cells);
            break;
        }
        if !line.starts_with('|') || line.starts_with("|}") {
            return None;
        }
    }
    let (column, kind) = header?
        .split("!!")
        .enumerate()
        .find_map(|(i, cell)| secret_column(wiki_cell_text(cell).1).map(|kind| (i, kind)))?;
    let line = row.as_str();
    let mut at = 1;
    for (i, cell) in line.get(1..)?.split("||").enumerate() {
        if i == column {
            let (skip, text) = wiki_cell_text(cell);
            return column_value(row.start() + at + skip, text, kind);
        }
        at += cell.len() + 2;
    }
    None
}

/// A MediaWiki cell's text and where it starts in the cell: after its attributes and their
/// `|`, if it has any.
fn wiki_cell_text(cell: &str) -> (usize, &str) {
    match cell.rfind('|') {
        Some(bar) => (bar + 1, &cell[bar + 1..]),
        None => (0, cell),
    }
}

/// A value cell of an HTML table row (`<tr><td>…</td>…</tr>`) under a secret-named column
/// of the table's header row, the last row with `<th>` cells before it in the same table,
/// looked for no more than 4 KiB back. A row longer than 4 KiB is not read.
pub(super) fn html_table_cell(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let row = caps.get(0)?;
    if row.len() > 4 << 10 {
        return None;
    }
    let cells = html_cells(row.as_str());
    if cells.iter().any(|cell| cell.0) {
        return None;
    }
    let from = hay.floor_char_boundary(row.start().saturating_sub(4 << 10));
    let before = &hay[from..row.start()];
    let lower = before.to_ascii_lowercase();
    let table = lower.rfind("<table").unwrap_or(0);
    let header_end = table + lower[table..].rfind("</th>")?;
    let header_start = table + lower[table..header_end].rfind("<tr")?;
    let header = &before[header_start..];
    let (column, kind) = html_cells(header)
        .into_iter()
        .enumerate()
        .find_map(|(i, (_, a, b))| secret_column(inner_text(&header[a..b])?).map(|k| (i, k)))?;
    let &(_, a, b) = cells.get(column)?;
    let cell = &row.as_str()[a..b];
    let value = inner_text(cell)?;
    let offset = a + (value.as_ptr() as usize - cell.as_ptr() as usize);
    column_value(row.start() + offset, value, kind)
}

/// The cells of an HTML table row: whether each is a header cell (`<th>`), and its content's
/// span, up to its closing tag (or the row's end).
fn html_cells(row: &str) -> Vec<(bool, usize, usize)> {
    let lower = row.to_ascii_lowercase();
    let mut cells = Vec::new();
    let mut at = 0;
    while let Some(open) = lower[at..].find("<t").map(|i| at + i) {
        let kind = lower.as_bytes().get(open + 2).copied();
        let next = lower.as_bytes().get(open + 3).copied();
        at = open + 2;
        let opens_cell = matches!(kind, Some(b'd' | b'h'))
            && matches!(next, Some(b'>' | b' ' | b'\t' | b'\r' | b'\n'));
        if !opens_cell {
            continue;
        }
        let Some(start) = lower[open..].find('>').map(|i| open + i + 1) else {
            break;
        };
        let end = lower[start..].find("</t").map_or(row.len(), |i| start + i);
        cells.push((kind == Some(b'h'), start, end));
        at = end;
    }
    cells
}

/// An HTML cell's text without the tags wrapped around it (`<code>…</code>`, `<b>…</b>`), or
/// `None` when tags stand inside it.
fn inner_text(cell: &str) -> Option<&str> {
    let mut text = cell.trim();
    while text.starts_with('<') {
        let end = text.find('>')?;
        text = text[end + 1..].trim_start();
    }
    while text.ends_with('>') {
        let start = text.rfind('<')?;
        text = text[..start].trim_end();
    }
    (!text.contains(['<', '>'])).then_some(text)
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
        (lower.ends_with("pre-shared key")
            || lower.ends_with("preshared key")
            || foreign_password_header(&label.to_lowercase()))
        .then_some(true)
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
    separated_cell(caps, hay, ',')
}

/// [`csv_cell`] for tab-separated values (`Client<TAB>Portal<TAB>Login<TAB>Password`).
pub(super) fn tsv_cell(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    separated_cell(caps, hay, '\t')
}

fn separated_cell(caps: &Captures<'_>, hay: &str, separator: char) -> Option<(usize, usize)> {
    let row = caps.get(0)?;
    // The first line ends within 4 KiB, so each row reads a bounded header.
    let head = &hay[..hay.floor_char_boundary(hay.len().min(4 << 10))];
    let header = head.split_once('\n')?.0.trim_end_matches('\r');
    if row.start() == 0 || header.contains('"') {
        return None;
    }
    let names: Vec<&str> = header.split(separator).collect();
    let (column, kind) = names.iter().enumerate().find_map(|(i, name)| {
        let kind = secret_column(name)
            .or_else(|| secret_name(&name.trim().to_ascii_lowercase()).map(|_| Column::Secret))?;
        Some((i, kind))
    })?;
    let line = row.as_str().trim_end_matches('\r');
    let fields: Vec<&str> = line.split(separator).collect();
    if fields.len() != names.len() {
        return None;
    }
    let before: usize = fields[..column].iter().map(|f| f.len() + 1).sum();
    column_value(row.start() + before, fields[column], kind)
}

/// A cell's value without the code markup around it: Markdown's backquotes, Textile's `@…@`
/// (a Maven placeholder, `@db.password@`, is then a name and never a value).
fn unmarked(cell: &str) -> &str {
    // Confluence's monospace is tight (`{{…}}`); a template's braces hold spaces (`{{ .x }}`).
    let cell = match cell.strip_prefix("{{").and_then(|v| v.strip_suffix("}}")) {
        Some(inner) if !inner.starts_with(' ') && !inner.ends_with(' ') => inner,
        _ => cell,
    };
    let v = cell.trim_matches('`');
    let v = ["**", "__", "''"]
        .iter()
        .find_map(|m| v.strip_prefix(m).and_then(|v| v.strip_suffix(m)))
        .unwrap_or(v);
    match v.strip_prefix('@').and_then(|v| v.strip_suffix('@')) {
        Some(inner) if !inner.is_empty() => inner,
        _ => v,
    }
}

/// Last words of header cells that name a column of passwords.
const PASSWORD_HEADERS: &[&str] = &[
    "password",
    "pass",
    "passwd",
    "pwd",
    "passphrase",
    "passcode",
];

/// Last words of header cells that name a column of other secrets.
const TABLE_SECRET_HEADERS: &[&str] = &["secret", "token", "credential", "credentials"];

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
