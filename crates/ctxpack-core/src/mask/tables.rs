//! Credentials in tables: a cell labelled as a secret (`| Password | … |`), or under a column
//! whose header names one, in the table syntaxes documents are written in (Markdown,
//! Confluence, MediaWiki, HTML, CSV and tab-separated values). These rules run last: a table's
//! cells are judged as prose's values are ([`prose_value`], [`reads_as_credential`]).

use super::prose::{prose_credential, prose_value, reads_as_credential};
use super::rules::foreign_password_word;
use super::*;

/// The rules for tables, in the order they run, after every other rule.
pub(super) const TABLE_SPECS: &[Spec] = &[
    Spec {
        kind: "prose_credential",
        description: "a Markdown or Confluence table's value cell: in a row labelled with a secret name (| Password | ... |, | Пароль | ... |) or under a column headed by one (| env | user | DB password |, || Host || Wachtwoord ||)",
        // A label or header cell that ends in a secret word, in English or another language;
        // then every row of such a text is looked at.
        // (Not a bare `key` or `token`: `|key|` and `|token|` are closures' arguments in code.)
        prefilter: r"(?i-u)(?:pass(?:word|wd|phrase|code)?|pwd|secret|psk|shared key|api key|api token|credentials?)[*_`]*[ \t]*\|",
        pattern: r"(?m)^[ \t]*\|[^\r\n]*\|[ \t]*\r?$",
        locate: table_cell,
    },
    Spec {
        kind: "prose_credential",
        description: "an HTML table's value cell in a row labelled with a secret name (<th>Password</th><td>...</td>)",
        // From the label's word to the end of its cell.
        prefilter: r"(?i-u)(?:pass(?:word|wd|phrase)|pwd|pre-?shared key|api key|api token|secret|token)[ \t]*:?[ \t]*(?:</(?:b|strong)>)?[ \t]*</t[dh]>",
        pattern: concat!(
            r"<(?i-u:t[dh])(?:[ \t][^<>]*)?>[ \t]*(?:<(?i-u:b|strong)>)?[ \t]*",
            // A few words may come first (`Maintenance password`).
            r"(?:[A-Za-z][A-Za-z-]*[ \t]+){0,3}",
            r"(?i-u:pass(?:word|wd|phrase)|pwd|pre-?shared key|api key|api token|secret|token)[ \t]*:?[ \t]*",
            r"(?:</(?i-u:b|strong)>)?[ \t]*</(?i-u:t[dh])>\s*<(?i-u:td)(?:[ \t][^<>]*)?>[ \t]*",
            r"(?:<(?i-u:code|b|strong|tt|kbd)>)?(?P<a>[^<\s]{8,})(?:</(?i-u:code|b|strong|tt|kbd)>)?[ \t]*</(?i-u:td)>",
        ),
        locate: prose_credential,
    },
    Spec {
        kind: "prose_credential",
        description: "a CSV row's value under a column headed by a secret name (system,url,username,password,...)",
        // Anchored at the text's start: the header is its first line, and a pass that starts
        // nowhere else costs nothing on the texts that are not CSV.
        prefilter: r"(?i-u)\A(?:[\t\x20-\x2b\x2d-\x7e]*,)*[ \t]*[a-z_ ]*(?:passw(?:or)?d|pass|pwd|secret|token|passphrase|passcode|credentials?|api_?key)[ \t]*(?:,|\r?\n)",
        pattern: r#"(?m)^[^\r\n",]*(?:,[^\r\n",]*){1,63}\r?$"#,
        locate: csv_cell,
    },
    Spec {
        kind: "prose_credential",
        description: "a tab-separated row's value under a column headed by a secret name (Client<TAB>Portal<TAB>Login<TAB>Password)",
        // Anchored at the text's start, as the CSV rule is.
        prefilter: r"(?i-u)\A(?:[\x20-\x7e]*\t)*[ ]*[a-z_ ]*(?:passw(?:or)?d|pass|pwd|secret|token|passphrase|passcode|credentials?|api_?key)[ ]*(?:\t|\r?\n)",
        pattern: r#"(?m)^[^\r\n"\t]*(?:\t[^\r\n"\t]*){1,63}\r?$"#,
        locate: tsv_cell,
    },
    Spec {
        kind: "prose_credential",
        description: "a MediaWiki table's value cell under a column headed by a secret name (! Device !! IP !! Login !! Password)",
        // A table's start; its header's names are read by the locator, so the one pass carries
        // no list of words for it.
        prefilter: r"(?m)^[ \t]*\{\|",
        // A row of cells on one line (not `|-`, `|}` or a caption).
        pattern: r"(?m)^\|[^-}+\r\n][^\r\n]*\|\|[^\r\n]*$",
        locate: wiki_table_cell,
    },
    Spec {
        kind: "prose_credential",
        description: "an HTML table's value cell under a column headed by a secret name (<th>Password</th>, <th>Lösenord</th>)",
        // A header cell's end; its names are read by the locator.
        prefilter: r"</(?i-u:th)>",
        // A row; its cells are read by the locator.
        pattern: r"(?s)<(?i-u:tr)(?:[ \t\r\n][^<>]*)?>.*?</(?i-u:tr)>",
        locate: html_table_cell,
    },
];

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
