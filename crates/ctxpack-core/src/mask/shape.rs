//! What a value looks like: random or generated, a placeholder, a reference, a path, code; the
//! checks the locating functions share.

use super::*;

/// An Algolia search-only key in a DocSearch-style configuration (`apiKey` beside `appId` and
/// `indexName`, as VitePress and Docusaurus sites publish it): public by design, it ships in
/// the site's pages.
pub(super) fn is_search_only_key(key: &str, hay: &str, at: usize) -> bool {
    if !key.eq_ignore_ascii_case("apikey") && !key.eq_ignore_ascii_case("api_key") {
        return false;
    }
    let from = hay.floor_char_boundary(at.saturating_sub(300));
    let to = hay.ceil_char_boundary(at + 300);
    let window = &hay[from..to];
    ["indexName", "index_name"]
        .iter()
        .any(|w| window.contains(w))
        && ["appId", "app_id", "applicationId"]
            .iter()
            .any(|w| window.contains(w))
}

/// Names of keys whose values are identifiers, positions or public material, never secrets.
pub(super) const NOT_SECRET_KEY_WORDS: &[&str] = &[
    "public",
    "publishable",
    "pub",
    "primary",
    "foreign",
    "partition",
    "sort",
    "range",
    "cache",
    "idempotency",
    "dedup",
    "lookup",
    "hash",
    "row",
    "map",
    "index",
];

/// A random-looking value under a name ending in `key`, `key_base`, `salt`, `pepper`, `hmac`,
/// `credentials` or `auth` (a whole word of the name: `monkey` and `oauth` are not).
pub(super) fn high_entropy_key(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let key = caps.name("k")?.as_str();
    let word = caps.name("w")?;
    let sep = caps.name("sep")?;
    // `key == …` and `key::Kind`: a comparison and a path, not assignments.
    if hay[sep.end()..].starts_with(['=', ':']) {
        return None;
    }
    let before = &hay[caps.get(0)?.start()..word.start()];
    if !is_word_start(before, word.as_str()) {
        return None;
    }
    let lower = key.to_ascii_lowercase();
    // A salt is a salt whatever it seasons (Drupal's `hash_salt`).
    let salt = ["salt", "pepper"].contains(&word.as_str().to_ascii_lowercase().as_str());
    if (!salt && NOT_SECRET_KEY_WORDS.iter().any(|w| lower.contains(w)))
        || is_search_only_key(key, hay, caps.get(0)?.start())
    {
        return None;
    }
    if let Some(whole) = random_printable_value(caps, hay) {
        return Some(whole);
    }
    let m = caps.name("qv").or_else(|| caps.name("bv"))?;
    let value = m.as_str();
    // `nKey = sqlite3BtreePayloadSize(pCur);`: a bare identifier that is called, indexed or
    // dereferenced is code.
    let next = hay[m.end()..].chars().next();
    if caps.name("bv").is_some()
        && (looks_like_code(value) || matches!(next, Some('(' | '[' | '.' | '-' | '?' | '!')))
    {
        return None;
    }
    let ok = !is_placeholder(value)
        && !is_public_or_test_key(value)
        && !is_path(value)
        && !value.contains("://")
        && !is_stand_in(value)
        && (looks_random(value)
            || (caps.name("qv").is_some() && looks_random_printable(value, false))
            || is_random_list(value));
    ok.then(|| span(m))
}

/// Strapi's `APP_KEYS="k1==,k2=="`: a comma-separated list of random keys.
pub(super) fn is_random_list(value: &str) -> bool {
    value.contains(',') && value.split(',').all(looks_random)
}

/// The span of a rule's value when it is a [random printable key](is_random_printable_key):
/// a quoted one (`qv`) as it is, a bare one (`bv`, or `rv` where the rule has a group for such
/// keys alone) by its whole run, since the rule's expression stops a bare value at characters
/// such a key holds by chance (`e2161uYe+#^X3v…(6+…&…`). Judged before the checks for
/// templates and code, which those characters would fail.
pub(super) fn random_printable_value(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    if let Some(quoted) = caps.name("qv") {
        return is_random_printable_key(quoted.as_str()).then(|| span(quoted));
    }
    let bare = caps.name("bv").or_else(|| caps.name("rv"))?;
    random_printable_run(hay, bare.start())
}

/// The span of the bare value starting at `start` in `hay` (to the next space, quote, `;` or
/// `,`) when it is a [random printable key](is_random_printable_key): a rule's bare value stops
/// at the characters such a key holds by chance, so it is judged by its whole run.
fn random_printable_run(hay: &str, start: usize) -> Option<(usize, usize)> {
    let end = run_end(hay, start, |b| {
        b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`' | b';' | b',')
    })?;
    is_random_printable_key(&hay[start..end]).then_some((start, end))
}

/// How far a value is looked at past where a rule's expression stopped it: a key, a password
/// or a line's prefix longer than this is none, and the bound keeps a rule's look at each of
/// many matches on one long line (a minified file) from reading the rest of the line each time.
pub(super) const RUN_LIMIT: usize = 1024;

/// The end of the run of bytes from `start` before the first that `stop` takes (or the text's
/// end), if it comes within [`RUN_LIMIT`] bytes. `stop` must take only ASCII bytes, so the end
/// is a character boundary.
pub(super) fn run_end(hay: &str, start: usize, stop: impl Fn(u8) -> bool) -> Option<usize> {
    let rest = &hay.as_bytes()[start..];
    match rest.iter().take(RUN_LIMIT + 1).position(|&b| stop(b)) {
        Some(n) => Some(start + n),
        None if rest.len() <= RUN_LIMIT => Some(hay.len()),
        None => None,
    }
}

/// Whether only spaces and tabs stand between the line's start and `at`, looked for no more
/// than [`RUN_LIMIT`] bytes back.
pub(super) fn starts_its_line(hay: &str, at: usize) -> bool {
    let before = &hay.as_bytes()[..at];
    let near = &before[before.len().saturating_sub(RUN_LIMIT)..];
    match near.iter().rposition(|&b| b == b'\n') {
        Some(n) => near[n + 1..].iter().all(|&b| b == b' ' || b == b'\t'),
        None => near.len() == before.len() && near.iter().all(|&b| b == b' ' || b == b'\t'),
    }
}

/// A key written as random printable characters, as Django's and many other generators write
/// them (`e2161uYe+#^X3v+MC+Qf9kp0@T#TQiU0T-Q==(6+EkDPa…`): 32 or more characters, random as
/// entropy says (4.3 bits or more, two classes and some punctuation), holding `%(`, `$` or
/// `(…)` by chance rather than as a template or a call does: it does not start as a template,
/// a reference or YAML's markup does, and holds no call or member of code
/// (`sha256(salt+pw.encode())`).
pub(super) fn is_random_printable_key(value: &str) -> bool {
    let len = value.len();
    if len < 32
        || !value.bytes().all(|b| b.is_ascii_graphic())
        || value.starts_with(['$', '{', '%', '<', '#', '@', '[', '(', '*', '&', '!', '|', '>'])
        || value.contains("://")
        || value.contains("::")
        || value.contains("->")
        // Committed ciphertext: SOPS's `ENC[AES256_GCM,data:…]`, Jasypt's `ENC(…)`.
        || value.starts_with("ENC[")
        || value.starts_with("ENC(")
        || is_public_or_test_key(value)
        // Base64 and other key alphabets are for the rules' other checks (a SealedSecret's
        // ciphertext is base64): here only what they cannot read, punctuation beyond them.
        || value
            .bytes()
            .all(|b| is_base64_byte(b) || matches!(b, b'-' | b'_' | b'.' | b':'))
    {
        return false;
    }
    let b = value.as_bytes();
    // A name of five or more letters called, or a member after a dot, is code.
    let mut run = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'(' && run >= 5 {
            return false;
        }
        if c == b'.'
            && b[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .count()
                >= 3
        {
            return false;
        }
        run = if c.is_ascii_alphabetic() || c == b'_' {
            run + 1
        } else {
            0
        };
    }
    let punct = value.bytes().filter(u8::is_ascii_punctuation).count();
    let classes = [
        value.bytes().any(|b| b.is_ascii_uppercase()),
        value.bytes().any(|b| b.is_ascii_lowercase()),
        value.bytes().any(|b| b.is_ascii_digit()),
    ];
    classes.iter().filter(|&&c| c).count() >= 2
        && punct >= 2
        && entropy(value) >= 4.3
        && !is_camel_words(value)
}

/// Random printable ASCII, as WordPress salts and generated encryption keys are
/// (`3Xr#h|kD~:l+_y@…`): long, from upper case, lower case, digits and punctuation (three of
/// the four, with several punctuation characters), high entropy, and neither words nor a
/// template. Spaces are allowed where the generator uses them (`allow_space`).
pub(super) fn looks_random_printable(value: &str, allow_space: bool) -> bool {
    let len = value.chars().count();
    let spaces = value.bytes().filter(|&b| b == b' ').count();
    if len < 32
        || !value.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
        || (spaces > 0 && (!allow_space || spaces * 8 > len))
        || value.contains('\\')
        || value.contains("://")
        || is_placeholder(value)
        || is_camel_words(value)
        || ends_in_uuid_groups(value)
    {
        return false;
    }
    let punct = value.bytes().filter(u8::is_ascii_punctuation).count();
    let classes = [
        value.bytes().any(|b| b.is_ascii_uppercase()),
        value.bytes().any(|b| b.is_ascii_lowercase()),
        value.bytes().any(|b| b.is_ascii_digit()),
        punct >= 3,
    ];
    classes.iter().filter(|&&c| c).count() >= 3 && punct >= 3 && entropy(value) >= 4.0
}

/// Whether `word` starts a word of a name whose earlier part is `before`: at the start, after a
/// separator, at a camelCase hump (`signingKey`), or anywhere in an all-capitals name.
pub(super) fn is_word_start(before: &str, word: &str) -> bool {
    let Some(prev) = before.chars().next_back() else {
        return true;
    };
    let first = word.chars().next().unwrap_or('a');
    !prev.is_ascii_alphanumeric()
        || (first.is_ascii_uppercase() && (prev.is_ascii_lowercase() || prev.is_ascii_digit()))
        || (first.is_ascii_uppercase() && !before.bytes().any(|b| b.is_ascii_lowercase()))
}

/// Random-looking: long, from a base64 or hex alphabet, mixing classes, with high Shannon
/// entropy, and not words joined by separators. Laravel's `base64:` prefix is a strong hint.
pub(super) fn looks_random(value: &str) -> bool {
    if let Some(rest) = value.strip_prefix("base64:") {
        return rest.len() >= 32 && rest.bytes().all(is_base64_byte);
    }
    if value.len() < 20
        || !value.bytes().all(is_base64_byte)
        || is_word_list(value)
        || is_periodic(value)
    {
        return false;
    }
    let digit = value.bytes().any(|b| b.is_ascii_digit());
    if value.bytes().all(|b| b.is_ascii_hexdigit()) {
        let letter = value.bytes().any(|b| b.is_ascii_alphabetic());
        return value.len() >= 32 && digit && letter && entropy(value) >= 3.0;
    }
    value.bytes().any(|b| b.is_ascii_uppercase())
        && value.bytes().any(|b| b.is_ascii_lowercase())
        && digit
        && entropy(value) >= 3.5
        && !is_camel_words(value)
}

/// A value that repeats a unit of up to 16 bytes (`0123456789abcdef0123456789abcdef`, a
/// known-answer test's key): no generated key does.
pub(super) fn is_periodic(value: &str) -> bool {
    let b = value.as_bytes();
    (1..=(b.len() / 2).min(16)).any(|p| b[p..] == b[..b.len() - p])
}

/// Mostly runs of four or more lower-case letters (`sqlite3BtreePayloadSize`): identifier
/// words. In random base64 such runs hold about a tenth of the characters.
pub(super) fn is_camel_words(value: &str) -> bool {
    let mut in_runs = 0;
    let mut run = 0;
    for b in value.bytes().chain(std::iter::once(b' ')) {
        if b.is_ascii_lowercase() {
            run += 1;
        } else {
            if run >= 4 {
                in_runs += run;
            }
            run = 0;
        }
    }
    in_runs * 10 >= value.len() * 4
}

pub(super) fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-')
}

/// Shannon entropy in bits per character.
pub(super) fn entropy(value: &str) -> f64 {
    let mut counts = [0_u32; 256];
    for b in value.bytes() {
        counts[usize::from(b)] += 1;
    }
    let len = value.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum()
}

/// Words, numbers and short tags joined by `_`, `-` or `.` (`deploy-bot-2024`,
/// `user_profile_v2`, `m2m-access-token-12345`): a name or a label.
pub(super) fn is_word_list(value: &str) -> bool {
    value.contains(['_', '-', '.'])
        && value.split(['_', '-', '.']).all(|part| {
            part.bytes().all(|b| b.is_ascii_alphabetic())
                || part.bytes().all(|b| b.is_ascii_digit())
                || (part.len() <= 3 && part.bytes().all(|b| b.is_ascii_alphanumeric()))
        })
}

/// Whether `value` ends in a UUID's last four groups (`window-fcc6-11e5-b4f8-330a88ab9d7f`, the
/// WebDriver specification's window key): an identifier made from one, not a secret.
pub(super) fn ends_in_uuid_groups(value: &str) -> bool {
    let parts: Vec<&str> = value.rsplitn(5, '-').collect();
    parts.len() >= 4
        && parts
            .iter()
            .take(4)
            .zip([12, 4, 4, 4])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `8-4-4-4-12` hex: an identifier.
pub(super) fn is_uuid(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Decodes standard or URL-safe base64, padded or not.
pub(super) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0_u32, 0_u32);
    for b in text.trim_end_matches('=').bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xFF).expect("masked to a byte"));
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Whether `name` is secret-named: it ends in a secret word (optionally followed by `key` or
/// `value`); and if so, whether the word names something people choose (`pass`, `pwd`,
/// `secret`: any value goes) rather than something generated (`token`, `api_key`).
pub(super) fn secret_name(name: &str) -> Option<bool> {
    // Longer words first: `password` must not be read as `pass` and a `word` suffix.
    const WORDS: &[&str] = &[
        "passwd",
        "password",
        "passphrase",
        "passcode",
        "pass",
        "pwd",
        "pw",
        "psk",
        "secret",
        "token",
        "authtok",
        "apikey",
        "accesskey",
        "privatekey",
        "licensekey",
    ];
    let name = name.trim_matches(['"', '\'']);
    let lower = name.to_ascii_lowercase();
    // Helm's `existingSecret` (and `existingSecretPasswordKey`) names a Kubernetes secret
    // object, or a field of one: the value is a name, never the secret.
    if lower
        .replace(['_', '-', '.'], "")
        .contains("existingsecret")
    {
        return None;
    }
    // (PAM's and SSSD's `authtok` is the password a user typed.)
    let human = ["pass", "pw", "psk", "secret", "authtok"]
        .iter()
        .any(|w| lower.contains(w));
    // The whole name, and the name without a trailing `key` or `value` (`secret_key`).
    let mut stems = vec![lower.len()];
    for suffix in ["key", "value"] {
        if let Some(rest) = lower.strip_suffix(suffix) {
            stems.push(rest.trim_end_matches(['_', '.', '-']).len());
        }
    }
    for end in stems {
        let stem = &lower[..end];
        // `api_key`, `api.key` and `api-key` all end in `apikey` once separators are gone.
        let flat: String = stem
            .chars()
            .filter(|c| !matches!(c, '_' | '.' | '-'))
            .collect();
        let Some(word) = WORDS.iter().find(|w| flat.ends_with(*w)) else {
            continue;
        };
        if *word == "pw" {
            // `db.pw`, `DB_PW`, `pw`: a password; `npw`, `kpw`: not a word of the name.
            let Some(before) = stem.strip_suffix("pw") else {
                continue;
            };
            if !(before.is_empty() || before.ends_with(['_', '.', '-'])) {
                continue;
            }
        }
        if *word == "pass" {
            // `DB_PASS`, `SMTP_PASS` (environment variables) and `--pass`: a password. In
            // code, `render_pass`, `first_pass` and `bypass` are passes over something.
            let Some(at) = stem.strip_suffix("pass").map(str::len) else {
                continue;
            };
            let before = name[..at].trim_start_matches('-');
            // (`SSHPASS` is what `sshpass -e` reads; Dovecot's `dnpass` is an LDAP bind DN's.)
            let env_var = (!name.bytes().any(|b| b.is_ascii_lowercase())
                && (before.chars().next_back().is_none_or(|c| c == '_') || name == "SSHPASS"))
                || name == "dnpass";
            // `ansible_ssh_pass`, `ansible_become_pass`, `db_pass`: the word before names
            // what the password opens, never a kind of pass over something.
            let credential = before
                .to_ascii_lowercase()
                .strip_suffix(['_', '-', '.'])
                .and_then(|b| b.rsplit(['_', '-', '.']).next().map(str::to_owned))
                .is_some_and(|w| PASS_OWNERS.contains(&w.as_str()));
            if !(before.is_empty() || env_var || credential) {
                continue;
            }
        }
        return Some(human);
    }
    None
}

/// A literal given to a name is its secret: any credible literal under a secret-named name, a
/// random-looking one under a key- or salt-named one (`APP_KEY`).
pub(super) fn named_value_is_secret(name: &str, value: &str) -> bool {
    match secret_name(name) {
        Some(human) => credible(value, human),
        None => names_a_key(name) && !is_placeholder(value) && looks_random(value),
    }
}

/// A name whose last word is `key` or `salt` (`APP_KEY`, `ARTIFACTORY_KEY`, `hashSalt`) and
/// names nothing public or positional (`PRIMARY_KEY`, `cache_key`).
pub(super) fn names_a_key(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let word = ["key", "salt"].into_iter().find(|w| lower.ends_with(w));
    word.is_some_and(|w| {
        let before = &name[..name.len() - w.len()];
        let first = &name[name.len() - w.len()..];
        is_word_start(before, first)
            && (w == "salt" || !NOT_SECRET_KEY_WORDS.iter().any(|n| lower.contains(n)))
    })
}

/// Words that, before `_pass`, make it a password (`ansible_ssh_pass`, `db_pass`).
pub(super) const PASS_OWNERS: &[&str] = &[
    "ssh", "become", "sudo", "su", "db", "smtp", "mail", "admin", "root", "user", "login", "vault",
    "ldap", "ftp", "sftp", "redis", "mysql", "pg", "proxy", "bind", "auth", "winrm",
    // RabbitMQ's `default_pass`.
    "default",
];

/// Credential-shaped: eight or more characters mixing letters and digits, not words joined by
/// separators, and not a dotted number (an OID or a version) or a braced GUID.
pub(super) fn looks_credential_shaped(value: &str) -> bool {
    value.chars().count() >= 8
        && value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && !is_word_list(value)
        && !value.contains(['{', '}'])
}

/// A generated credential mixes character classes (two of lower case, upper case, digits) or
/// is long; `"coalesce"` or `progress` is a word.
pub(super) fn looks_generated(value: &str) -> bool {
    // Generated values are ASCII (`API-Schlüssel` is a German label), and a capital that only
    // starts a word is no class of its own (`Zugriffstoken`, `Bearer`).
    if !value.is_ascii() {
        return false;
    }
    let classes = [
        value.bytes().any(|b| b.is_ascii_lowercase()),
        value.bytes().skip(1).any(|b| b.is_ascii_uppercase()),
        value.bytes().any(|b| b.is_ascii_digit()),
    ];
    // Letters alone with no capital inside read as one long word (`Aktualisierungstoken`) up to
    // a length no word has.
    let one_word = !classes[1] && value.bytes().all(|b| b.is_ascii_alphabetic());
    let long = value.len() >= if one_word { 32 } else { 20 };
    classes.iter().filter(|&&c| c).count() >= 2 || long
}

/// Whole values (case-insensitive) that stand for a secret rather than being one.
pub(super) const PLACEHOLDER_WORDS: &[&str] = &[
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "changethis",
    "change_this",
    "password",
    "passwd",
    "pass",
    "pwd",
    "secret",
    "token",
    "example",
    "placeholder",
    "redacted",
    "dummy",
    "hidden",
    "masked",
    "default",
    "empty",
    "required",
    "optional",
    "string",
    "none",
    "null",
    "nil",
    "undefined",
    "true",
    "false",
    "yes",
    "no",
    "todo",
    "fixme",
    "tbd",
];

/// Prefixes of references to a secret kept elsewhere: a cloud secret manager, Vault, a file.
pub(super) const REFERENCE_PREFIXES: &[&str] = &[
    "arn:",
    "vault:",
    "ref+",
    "secretsmanager:",
    "ssm:",
    "sops:",
    "keyvault:",
    "env:",
    "file:",
    // Vault's key/value paths (`secret=secret/data/db` in a lookup).
    "secret/data/",
    "kv/data/",
    // Azure App Service's Key Vault references, by URI or by vault and secret name.
    "@microsoft.keyvault(",
];

/// A reference, template, placeholder word or marker: something that is not itself a secret.
pub(super) fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.is_empty()
        || value.contains(MARKER_PREFIX)
        || is_variable_reference(value)
        || (value.starts_with('<') && value.ends_with('>'))
        || (value.starts_with('{') && value.ends_with('}') && !is_braced_ciphertext(value))
        || (value.len() > 2 && value.starts_with('%') && value.ends_with('%'))
        || (value.len() > 2 && value.starts_with('@') && value.ends_with('@'))
        // A Windows answer file exported by Sysprep says `*SENSITIVE*DATA*DELETED*`.
        || (value.len() > 2 && value.starts_with('*') && value.ends_with('*'))
        || ["${", "{{", "}}", "#{", "%(", "%s"]
            .iter()
            .any(|t| value.contains(t))
        || value
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '-' | '_' | '•' | '…'))
        || is_elided(value)
        || PLACEHOLDER_WORDS.contains(&lower.as_str())
        // `[REDACTED]`, `(hidden)`, `true/false`, `yes|no`: placeholder words, bracketed or
        // listed as alternatives.
        || lower
            .split(['/', '|'])
            .all(|w| PLACEHOLDER_WORDS.contains(&w.trim_matches(['[', ']', '(', ')', '*', '<', '>'])))
        || lower.starts_with("your")
        || lower.starts_with("<your")
        || value.contains("YOUR")
        || value.contains("Your")
        || lower.contains("your_")
        || lower.contains("your-")
        || lower.starts_with("replace")
        || ["changeme", "change-me", "change_me", "change-this", "change_this"]
            .iter()
            .any(|p| lower.starts_with(p))
        || lower.contains("replace_me")
        || lower.contains("replace-me")
        || lower.contains("replaceme")
        || lower.ends_with("_here")
        || lower.ends_with("-here")
        || REFERENCE_PREFIXES.iter().any(|p| lower.starts_with(p))
        || (lower.starts_with("projects/") && lower.contains("/secrets/"))
        // GraphQL's built-in scalars as a field's type (`password: String!`).
        || ["String!", "ID!", "Int!", "Float!", "Boolean!"].contains(&value)
}

/// `{COQLCE6DU6GtcS5P=}` (Maven's encrypted `settings.xml` passwords) and Jenkins'
/// `{AQAAABAAAAAQ…}`: base64 ciphertext in braces, not a `{name}` template.
pub(super) fn is_braced_ciphertext(value: &str) -> bool {
    let inner = &value[1..value.len().saturating_sub(1).max(1)];
    inner.len() >= 16
        && inner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        && inner.bytes().any(|b| b.is_ascii_digit())
        && inner.bytes().any(|b| b.is_ascii_uppercase())
        && inner.bytes().any(|b| b.is_ascii_lowercase())
}

/// `$VAR`, `${VAR}`, `$(cmd)`: a shell, env-file or CI reference.
pub(super) fn is_variable_reference(value: &str) -> bool {
    let mut chars = value.chars();
    chars.next() == Some('$')
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '{' | '('))
}

/// Checks shared by quoted and bare values.
pub(super) fn literal_is_secret(value: &str) -> bool {
    value.chars().count() >= 6
        && !value.chars().any(char::is_whitespace)
        && !names_a_password(value)
        && !is_sealed_ciphertext(value)
        && !is_public_or_test_key(value)
        && !is_placeholder(value)
        && !is_credential_name(value)
        && !value.contains("://")
        && !is_path(value)
}

/// The words "password" and "secret" in other languages: the label a locale file gives the
/// field (`password: "Passwort"`, `login.password=Пароль`, `secret: "Geheimnis"`), not a
/// password.
const PASSWORD_WORDS: &[&str] = &[
    "passwort",
    "kennwort",
    "mot de passe",
    "contraseña",
    "senha",
    "wachtwoord",
    "parola",
    "hasło",
    "пароль",
    "密码",
    "密碼",
    "パスワード",
    "비밀번호",
    "şifre",
    "lösenord",
    "adgangskode",
    "passord",
    "salasana",
    "heslo",
    "jelszó",
    "κωδικός",
    "סיסמה",
    "كلمة المرور",
    "mật khẩu",
    "รหัสผ่าน",
    "parolă",
    "lozinka",
    "geslo",
    "slaptažodis",
    "geheimnis",
    "secreto",
    "segredo",
    "segreto",
    "sekret",
    "секрет",
    "秘密",
    "비밀",
];

pub(super) fn names_a_password(value: &str) -> bool {
    let lower = value.trim().to_lowercase();
    // A word outside ASCII inside a longer value is a message about the password
    // (`パスワードをお忘れですか？`, "forgot your password?"), which no one types as one.
    PASSWORD_WORDS.contains(&lower.as_str())
        || PASSWORD_WORDS
            .iter()
            .any(|w| !w.is_ascii() && lower.contains(w))
}

/// A Bitnami SealedSecret's `encryptedData` value: ciphertext that only the cluster's
/// controller can open, committed by design. It starts `Ag` and is hundreds of base64
/// characters long.
pub(super) fn is_sealed_ciphertext(value: &str) -> bool {
    value.starts_with("Ag") && value.len() >= 300 && value.bytes().all(is_base64_byte)
}

/// A literal assigned to a secret-named name is its credential: any literal under a password-like
/// name (people choose words), a generated one under a token- or key-like name.
pub(super) fn credible(value: &str, human: bool) -> bool {
    literal_is_secret(value) && (human || (looks_generated(value) && !is_word_list(value)))
}

/// `"refresh_token"`, `"X-Api-Key"`, `token=token`: the value names a credential.
pub(super) fn is_credential_name(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let separated = value.contains(['_', '-', '.']);
    // `maxTokens`, `refreshToken`: a camelCase identifier (`FakePassword` is not one).
    let camel = value.starts_with(|c: char| c.is_ascii_lowercase());
    let all_lower = !value.bytes().any(|b| b.is_ascii_uppercase());
    (separated || all_lower || camel)
        && lower
            .bytes()
            .all(|b| b.is_ascii_lowercase() || matches!(b, b'_' | b'-' | b'.'))
        && ["pass", "pwd", "secret", "token", "key", "auth", "cred"]
            .iter()
            .any(|w| lower.contains(w))
}

/// A file path such as `/run/secrets/db`, `./secret.txt` or `~/.token`. Absolute paths must be
/// lower case so that base64 secrets, which may start with `/`, are not taken for paths.
pub(super) fn is_path(value: &str) -> bool {
    ["./", "../", "~/"].iter().any(|p| value.starts_with(p))
        || (value.starts_with('/')
            && value[1..].starts_with(|c: char| c.is_ascii_lowercase())
            && value.bytes().all(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || matches!(b, b'/' | b'_' | b'.' | b'-')
            }))
}

/// A bare value that is an expression in code: a call, an index, a generic type, or a path
/// through attributes (`self.token`, `process.env.TOKEN`, `crate::KEY`, `cfg->secret`).
pub(super) fn looks_like_code(value: &str) -> bool {
    if value.contains(['(', ')', '[', ']', '{', '}', '<', '>', '|']) || value.contains("::") {
        return true;
    }
    // `token?` and `self.next_token?`: Rust's `?` on a variable.
    let tried = value.strip_suffix('?');
    let normalized = tried.unwrap_or(value).replace("::", ".").replace("->", ".");
    // `Harbor1994?`: a chosen password ends so; a variable Rust tries is lower case.
    if tried.is_some()
        && !normalized.contains('.')
        && value.bytes().any(|b| b.is_ascii_uppercase())
        && value.bytes().any(|b| b.is_ascii_digit())
    {
        return false;
    }
    let mut parts = normalized.split('.');
    let is_ident = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
    };
    // `zWemT.opYkeWXQbKmJ1E`, `eHFSqBF.UZUv642GhEH`: a part mixing cases and digits without
    // words is generated; so is one that keeps changing between lower case, upper case and
    // digits (`SAgFh.y56edLOiDvyg6`, `Lzb6Bkpc5s9V`). (`resp.OAuth2Token`, `cfg.X509CertPem`:
    // a few capitals and a number start words, four or five changes.)
    let generated = |s: &str| {
        let upper = s.bytes().filter(u8::is_ascii_uppercase).count();
        s.len() >= 8
            && (upper >= 5 || (upper >= 2 && class_changes(s) >= 6))
            && s.bytes().filter(u8::is_ascii_lowercase).count() >= 2
            && s.bytes().any(|b| b.is_ascii_digit())
            && !is_camel_words(s)
    };
    (normalized.contains('.') || tried.is_some())
        && parts.clone().all(is_ident)
        && !parts.any(generated)
}
