//! Secret masking: finds credentials in text and replaces each one with `[REDACTED:<kind>]`.
//!
//! Hit text is masked before selection (and stored text is masked at index time), so a pack
//! never carries a secret and `redactionSummary` can say what was hidden, by kind. Masking is
//! pure: a [`Masker`] is a compiled, immutable rule set and [`Masker::mask`] a function from text
//! to masked text plus counts. Only the secret itself is replaced; everything around it is kept,
//! so `password = "hunter2"` becomes `password = "[REDACTED:password_assignment]"` and a
//! connection string keeps its scheme, user and host.
//!
//! # Rules
//!
//! The rules run in the order of this table, each over the output of the ones before it. A more
//! specific rule therefore wins (a GitHub token in `token = "ghp_…"` counts once, as
//! `github_token`), and because no rule accepts a `[REDACTED:…]` marker as a secret, masking
//! masked text changes nothing. Changing any rule bumps [`MASK_RULES_VERSION`].
//!
//! | kind | what it catches | what is replaced |
//! |---|---|---|
//! | `private_key` | PEM and OpenSSH private keys: `-----BEGIN … PRIVATE KEY-----` (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP `… PRIVATE KEY BLOCK`), also with `\n` escapes inside a string literal, and a block cut short by a chunk boundary | the whole block, BEGIN to END line inclusive |
//! | `anthropic_api_key` | `sk-ant-…` keys (`sk-ant-api03-…`, `sk-ant-admin01-…`) | the key |
//! | `openai_api_key` | `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` keys of 32 or more characters mixing upper case, lower case and digits | the key |
//! | `aws_access_key_id` | `AKIA` (long-term) and `ASIA` (temporary) access key ids: the prefix and 16 base-32 characters | the key id |
//! | `aws_secret_access_key` | a 40-character secret assigned to a name like `aws_secret_access_key`, `aws_secret_key` or `SecretAccessKey` | the value |
//! | `github_token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` followed by 36 or more characters, and fine-grained `github_pat_…` tokens | the token |
//! | `gitlab_token` | `glpat-` (personal), `gldt-`, `glrt-`, `glptt-`, `glft-`, `glsoat-`, `gloas-` tokens of 20 or more characters | the token |
//! | `slack_token` | `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxe-`, `xoxo-` tokens and `xapp-` app tokens (they always contain digits) | the token |
//! | `stripe_key` | live secret and restricted keys: `sk_live_…`, `rk_live_…` (and `_prod_`) | the key |
//! | `google_api_key` | `AIza` followed by 35 characters | the key |
//! | `jwt` | JSON Web Tokens: `eyJ…` header, `ey…` payload and (optional) signature, dot-separated base64url | the token |
//! | `connection_string_password` | the password in `scheme://user:PASSWORD@host` for any scheme (postgres, mysql, mongodb+srv, redis, amqp, https, …) | the password only |
//! | `password_assignment` | a value assigned to a name ending in `password`, `passwd`, `pwd`, `secret`, `token`, `api_key`/`apikey`, `access_key` or `private_key` (optionally followed by `key` or `value`, so `secret_key`, `clientSecret`, `DB_PASSWORD`, `x-api-key`), with `=`, `:`, `:=` or `=>`, in env, YAML, INI, JSON, URL-query, CLI-flag and code styles; the value is quoted or bare, at least 6 characters, no whitespace | the value, quotes kept |
//!
//! # What is deliberately not masked
//!
//! Masking errs towards hiding, but a rule that fires on every second line of code would bury
//! the real findings and waste the reader's budget, so these are left alone:
//!
//! - **References and templates**: `${VAR}`, `$VAR`, `$(cmd)`, `{{ … }}`, `%VAR%`, `%(name)s`,
//!   `%s`, `{name}`, `<your-password>` and other `<…>` placeholders, anything starting with
//!   `your` or ending in `_here`.
//! - **Placeholder words** (case-insensitive, whole value): `changeme`, `change_me`,
//!   `change-me`, `changeit`, `password`, `passwd`, `pass`, `pwd`, `secret`, `token`,
//!   `example`, `placeholder`, `redacted`, `dummy`, `hidden`, `masked`, `default`, `empty`,
//!   `required`, `optional`, `string`, `none`, `null`, `nil`, `undefined`, `true`, `false`,
//!   `yes`, `no`; and values made only of `*`, `x`, `.`, `-`, `_` (`******`, `xxxx`). `changeme`
//!   and `changeit` are well-known defaults: printing them reveals nothing a reader of the
//!   documentation does not already know, and they are everywhere in sample configuration.
//! - **The name of a credential rather than its value**: a value of letters and `_`/`-`/`.`
//!   only, either separated or all lower case, that itself contains `pass`, `pwd`, `secret`,
//!   `token`, `key`, `auth` or `cred` (`"refresh_token"`, `"X-Api-Key"`, `token=authtoken`;
//!   `Password=FakePassword` is still masked).
//! - **Plain words assigned to a token or key name**: tokens and API keys are generated, so
//!   for names ending in `token`, `api_key`, `access_key` or `private_key` the value must mix
//!   two of lower case, upper case and digits, or be 20 characters or longer (`zToken =
//!   "coalesce"` in a lexer is not a credential). Names with `pass`, `pwd` or `secret` take
//!   any value: people choose passwords that are plain words.
//! - **Code, not data** (bare, unquoted values only): function calls, indexing, generics and
//!   closures (`get_password()`, `os.environ["X"]`, `Option<String>`, `|token: &Token|`),
//!   attribute and path access (`self.token`, `process.env.TOKEN`, `cfg.Password`, `token?`),
//!   values starting with `* & ! | # @` (dereferences, references, negations, YAML tags and
//!   comments, annotations), any bare value followed by `,` or `;` after a spaced `=` or a `:`
//!   (`token: Token,`, `nToken = iEnd-iStart;`), and a type annotation followed by `=`
//!   (`NEXT_TOKEN: AtomicUsize = …`). A bare word of letters only (or digits only) after a
//!   spaced `=`, `:=`, `=>` or a `:` is read as a variable, type or prose (`password: str`,
//!   `token = next_token`, `max_token = 100000`) — unless the name is UPPER_CASE
//!   (`DB_PASSWORD: postgres`) or the `=` is tight (`PASSWORD=hunter`, as in env files, URL
//!   queries and `Password=…;` connection strings), where it is data. A bare word mixing
//!   letters and digits (`password: hunter2`) is masked.
//! - **Comparisons and paths**: `==` and `::` are not assignments (`if token == "…"`,
//!   `token::Kind`); a lower-case absolute or relative path (`PWD=/home/me`,
//!   `secret: /run/secrets/db`) and anything containing `://` (the connection-string rule
//!   handles URLs) are not secrets.
//! - **Values with whitespace**: quoted passphrases with spaces are not masked (a quoted string
//!   with spaces assigned to `password` is almost always a prompt or a message).
//! - **Test-mode keys** such as Stripe `sk_test_…`, and public keys and certificates.
//!
//! Limits: a secret split across two chunks, a private-key chunk that holds neither the BEGIN
//! nor the END line, an assignment whose value follows a type annotation
//! (`password: str = "…"`), names that do not end in a keyword (`password_confirmation`),
//! space-separated forms (`.netrc`'s `password hunter2`, `curl -u user:pass`) and vendor
//! tokens without a rule of their own outside an assignment are not caught. Measured on the
//! sources of ~300 crates (260 MB), the rules fire about twenty times, all on credential-shaped
//! test literals.
//!
//! # Speed
//!
//! One [`RegexSet`] of each rule's required literals (`AKIA`, `ghp_`, `://`, `password`, …)
//! runs first; a rule's full expression runs only when its literal occurs, and text with none
//! of them is returned borrowed after that single pass.
//!
//! ```
//! use ctxpack_core::Masker;
//!
//! let masker = Masker::new();
//! let (masked, counts) = masker.mask("DB_PASSWORD=s3cr3t!pass\nGITHUB_TOKEN=ghp_FAKEfake0123456789FAKEfake0123456789\n");
//! assert_eq!(masked, "DB_PASSWORD=[REDACTED:password_assignment]\nGITHUB_TOKEN=[REDACTED:github_token]\n");
//! assert_eq!(counts["github_token"], 1);
//! assert_eq!(counts["password_assignment"], 1);
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;

use regex::{Captures, Regex, RegexSet};

/// Bumped whenever the rule set changes (stored text is masked at index time).
pub const MASK_RULES_VERSION: u32 = 1;

/// How every marker starts; no rule accepts a value that starts with it, which is what makes
/// masking idempotent.
const MARKER_PREFIX: &str = "[REDACTED:";

/// Picks the byte range to replace out of a match, or `None` when the match is not a secret.
type Locate = fn(&Captures<'_>, &str) -> Option<(usize, usize)>;

/// One documented rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The snake_case kind, as written in the marker and counted in the redaction summary.
    pub kind: &'static str,
    /// What the rule catches, in one sentence.
    pub description: &'static str,
    regex: Regex,
    locate: Locate,
    marker: String,
}

impl Rule {
    /// Replaces every accepted match in `text`, or returns `None` when there is none.
    fn apply(&self, text: &str) -> Option<(String, u64)> {
        let mut out = String::new();
        let mut last = 0;
        let mut count = 0;
        for caps in self.regex.captures_iter(text) {
            let Some((start, end)) = (self.locate)(&caps, text) else {
                continue;
            };
            // Matches do not overlap and the secret lies inside its match, so this holds; the
            // check keeps a mistake in a rule from ever slicing backwards.
            if start < last || end < start {
                continue;
            }
            out.push_str(&text[last..start]);
            out.push_str(&self.marker);
            last = end;
            count += 1;
        }
        if count == 0 {
            return None;
        }
        out.push_str(&text[last..]);
        Some((out, count))
    }
}

/// A rule as written in the source, before compilation.
struct Spec {
    kind: &'static str,
    description: &'static str,
    /// A necessary condition for a match: every match of `pattern` contains a match of this.
    prefilter: &'static str,
    pattern: &'static str,
    locate: Locate,
}

/// The rules, in the order they run (more specific first). Keep the module documentation's
/// table in step with this list; a test checks that every kind is documented.
const SPECS: &[Spec] = &[
    Spec {
        kind: "private_key",
        description: "PEM or OpenSSH private key block, BEGIN to END line inclusive",
        prefilter: r"PRIVATE KEY",
        pattern: concat!(
            // A BEGIN line, then either key-shaped text up to the END line, or (the chunk was
            // cut before the END line) header/blank lines and base64 lines.
            r"-----BEGIN[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----",
            r"(?:[A-Za-z0-9+/=\s:,.\\-]*?-----END[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----",
            r"|(?:(?:\r?\n|\\r\\n|\\n)[ \t]*(?:[A-Za-z][A-Za-z-]*:[^\r\n\\]*)?)*",
            r"(?:(?:\r?\n|\\r\\n|\\n)[ \t]*[A-Za-z0-9+/=]{16,})+)",
            // A chunk that starts inside the block: base64 lines up to the END line.
            r"|(?m:^)[ \t]*(?:[A-Za-z0-9+/=]{16,}[ \t]*\r?\n)+[ \t]*",
            r"-----END[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----",
        ),
        locate: whole,
    },
    Spec {
        kind: "anthropic_api_key",
        description: "Anthropic API key (sk-ant-...)",
        prefilter: r"sk-ant-",
        pattern: r"(?-u:\b)(?P<s>sk-ant-(?:[a-z]{2,10}[0-9]{0,3}-)?[A-Za-z0-9_-]{20,300})",
        locate: group_s,
    },
    Spec {
        kind: "openai_api_key",
        description: "OpenAI API key (sk-..., sk-proj-..., sk-svcacct-..., sk-admin-...)",
        prefilter: r"sk-",
        pattern: r"(?-u:\b)(?P<s>sk-(?:(?:proj|svcacct|admin)-)?(?P<b>[A-Za-z0-9_-]{32,300}))",
        locate: openai,
    },
    Spec {
        kind: "aws_access_key_id",
        description: "AWS access key id (AKIA or ASIA and 16 base-32 characters)",
        prefilter: r"AKIA|ASIA",
        pattern: r"(?-u:\b)(?P<s>(?:AKIA|ASIA)[A-Z2-7]{16})(?-u:\b)",
        locate: group_s,
    },
    Spec {
        kind: "aws_secret_access_key",
        description: "AWS secret access key (40 characters) assigned to an aws_secret_access_key-like name",
        prefilter: r"(?i)secret[_.-]?access|aws[_.-]?secret",
        pattern: concat!(
            r"(?i)(?:aws[_.-]?secret[_.-]?(?:access[_.-]?)?key|secret[_.-]?access[_.-]?key)",
            r#"(?:\\?["'])?[ \t]*(?:=>|:=|=|:)[ \t]*(?:\\?["'])?"#,
            r"(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
        ),
        locate: group_s,
    },
    Spec {
        kind: "github_token",
        description: "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_ and 36+ characters; github_pat_...)",
        prefilter: r"gh[pousr]_|github_pat_",
        pattern: r"(?-u:\b)(?P<s>gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?-u:\b)",
        locate: group_s,
    },
    Spec {
        kind: "gitlab_token",
        description: "GitLab token (glpat-, gldt-, glrt-, glptt-, glft-, glsoat-, gloas- and 20+ characters)",
        prefilter: r"gl(?:pat|dt|rt|ptt|ft|soat|oas)-",
        pattern: r"(?-u:\b)(?P<s>gl(?:pat|dt|rt|ptt|ft|soat|oas)-[A-Za-z0-9_-]{20,255}(?:\.[A-Za-z0-9_-]+)*)",
        locate: group_s,
    },
    Spec {
        kind: "slack_token",
        description: "Slack token (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-, xoxo-, xapp-)",
        prefilter: r"xox[abeoprs]-|xapp-",
        pattern: r"(?-u:\b)(?P<s>xox[abeoprs]-[0-9A-Za-z-]{10,250}|xapp-[0-9]-[0-9A-Za-z-]{10,250})",
        locate: slack,
    },
    Spec {
        kind: "stripe_key",
        description: "Stripe live secret or restricted key (sk_live_..., rk_live_...)",
        prefilter: r"k_(?:live|prod)_",
        pattern: r"(?-u:\b)(?P<s>[sr]k_(?:live|prod)_[0-9A-Za-z]{10,247})(?-u:\b)",
        locate: group_s,
    },
    Spec {
        kind: "google_api_key",
        description: "Google API key (AIza and 35 characters)",
        prefilter: r"AIza",
        pattern: r"(?-u:\b)(?P<s>AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
        locate: group_s,
    },
    Spec {
        kind: "jwt",
        description: "JSON Web Token (eyJ... header, payload and optional signature)",
        prefilter: r"eyJ",
        pattern: r"(?-u:\b)(?P<s>eyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.(?:[A-Za-z0-9_-]{8,}={0,2})?)",
        locate: group_s,
    },
    Spec {
        kind: "connection_string_password",
        description: "password in a scheme://user:PASSWORD@host connection string",
        prefilter: r"://",
        pattern: r#"(?i)[a-z][a-z0-9+.-]{1,30}://[^\s:/@'"?#\[\]]*:(?P<s>[^\s@/'"?#\[\]]+)@"#,
        locate: connection_password,
    },
    Spec {
        kind: "password_assignment",
        description: "value assigned to a password, secret, token, api_key or access_key name",
        prefilter: r"(?i)passw|pwd|secret|token|api[_.-]?key|access[_.-]?key|private[_.-]?key",
        pattern: concat!(
            r"(?i)(?P<k>[a-z0-9_.-]*?",
            r"(?:passwd|password|pwd|secret|token|api[_.-]?key|access[_.-]?key|private[_.-]?key)",
            r"(?:[_.-]?(?:key|value))?)",
            r#"(?:\\?["'])?(?P<sep>[ \t]*(?:=>|:=|==|::|=|:)[ \t]*)"#,
            r#"(?:[rbfu]{0,2}\\?["'`](?P<qv>[^"'`\s\\]*)\\?["'`]"#,
            r#"|(?P<bv>[^\s"'`,;&=:|*!#@(\[{<][^\s"'`,;&]*))"#,
        ),
        locate: assignment,
    },
];

/// The compiled rule set.
///
/// Build it once ([`Masker::new`] compiles a dozen expressions) and share it: masking takes
/// `&self`, the type is `Send + Sync`, and cloning it is cheap.
#[derive(Clone, Debug)]
pub struct Masker {
    rules: Vec<Rule>,
    /// Pattern `i` is the required literal of `rules[i]`.
    prefilter: RegexSet,
}

impl Masker {
    /// Compiles the rule set. It never fails: the rules are constants, checked by the tests.
    pub fn new() -> Masker {
        let rules = SPECS
            .iter()
            .map(|spec| Rule {
                kind: spec.kind,
                description: spec.description,
                regex: Regex::new(spec.pattern)
                    .expect("mask rule patterns are constants covered by tests"),
                locate: spec.locate,
                marker: format!("{MARKER_PREFIX}{}]", spec.kind),
            })
            .collect();
        let prefilter = RegexSet::new(SPECS.iter().map(|spec| spec.prefilter))
            .expect("mask prefilter patterns are constants covered by tests");
        Masker { rules, prefilter }
    }

    /// The rules, in the order they run.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Returns the masked text and counts per kind (BTreeMap<String, u64>); the text is
    /// unchanged (borrowed) when nothing matched.
    pub fn mask<'a>(&self, text: &'a str) -> (Cow<'a, str>, BTreeMap<String, u64>) {
        let mut counts = BTreeMap::new();
        let mut current = Cow::Borrowed(text);
        // The set reports, in rule order, every rule whose required literal occurs. Masking
        // only removes text and adds markers, and no rule accepts a marker, so a rule skipped
        // here could not have matched the partly masked text either.
        for index in self.prefilter.matches(text).iter() {
            let rule = &self.rules[index];
            if let Some((masked, count)) = rule.apply(&current) {
                current = Cow::Owned(masked);
                *counts.entry(rule.kind.to_owned()).or_insert(0) += count;
            }
        }
        (current, counts)
    }
}

impl Default for Masker {
    fn default() -> Masker {
        Masker::new()
    }
}

/// The whole match is the secret.
fn whole(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.get(0)?;
    Some((m.start(), m.end()))
}

/// The `s` group is the secret.
fn group_s(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    Some((m.start(), m.end()))
}

/// Real `sk-` keys are random base62: demanding upper case, lower case and a digit keeps
/// `sk-some-long-css-class-name` and similar identifiers out.
fn openai(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let body = caps.name("b")?.as_str();
    let mixed = body.bytes().any(|b| b.is_ascii_uppercase())
        && body.bytes().any(|b| b.is_ascii_lowercase())
        && body.bytes().any(|b| b.is_ascii_digit());
    if mixed { group_s(caps, hay) } else { None }
}

/// Slack tokens carry numeric workspace and user ids; `xoxb-your-bot-token` does not.
fn slack(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let token = caps.name("s")?.as_str();
    if token.bytes().any(|b| b.is_ascii_digit()) {
        group_s(caps, hay)
    } else {
        None
    }
}

fn connection_password(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    if is_placeholder(m.as_str()) {
        None
    } else {
        Some((m.start(), m.end()))
    }
}

/// Decides whether the value of a `name = value` match is a secret; see the module
/// documentation for the reasoning behind each case.
fn assignment(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let key = caps.name("k")?.as_str();
    let sep = caps.name("sep")?.as_str();
    let op = sep.trim();
    if op == "==" || op == "::" {
        return None;
    }
    // Passwords are chosen by people and may be plain words; tokens and keys are generated, so
    // a plain word assigned to a `token` is a lexer token or a label, not a credential.
    let lower_key = key.to_ascii_lowercase();
    let human = ["pass", "pwd", "secret"]
        .iter()
        .any(|w| lower_key.contains(w));
    let plausible = |v: &str| literal_is_secret(v) && (human || looks_generated(v));
    if let Some(quoted) = caps.name("qv") {
        return plausible(quoted.as_str()).then_some((quoted.start(), quoted.end()));
    }
    let bare = caps.name("bv")?;
    let value = bare.as_str();
    if !plausible(value) || looks_like_code(value) {
        return None;
    }
    let tight_eq = sep == "=";
    let rest = &hay[bare.end()..];
    // `token = next;` or `{password: pwd, …}`: a statement or an argument list, not data
    // (except `Password=…;` in a tight `key=value;` connection string).
    if rest.starts_with([',', ';']) && !tight_eq {
        return None;
    }
    // `NEXT_TOKEN: AtomicUsize = …`: the bare word was a type annotation.
    let after = rest.trim_start_matches([' ', '\t']);
    if op == ":" && after.starts_with('=') && !after.starts_with("==") {
        return None;
    }
    if value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        let upper_key = !key.bytes().any(|b| b.is_ascii_lowercase());
        let has_digit = value.bytes().any(|b| b.is_ascii_digit());
        let has_alpha = value.bytes().any(|b| b.is_ascii_alphabetic());
        if !(upper_key || tight_eq || (has_digit && has_alpha)) {
            return None;
        }
    }
    Some((bare.start(), bare.end()))
}

/// A generated credential mixes character classes (two of lower case, upper case, digits) or
/// is long; `"coalesce"` or `progress` is a word.
fn looks_generated(value: &str) -> bool {
    let classes = [
        value.bytes().any(|b| b.is_ascii_lowercase()),
        value.bytes().any(|b| b.is_ascii_uppercase()),
        value.bytes().any(|b| b.is_ascii_digit()),
    ];
    classes.iter().filter(|&&c| c).count() >= 2 || value.chars().count() >= 20
}

/// Whole values (case-insensitive) that stand for a secret rather than being one.
const PLACEHOLDER_WORDS: &[&str] = &[
    "changeme",
    "change_me",
    "change-me",
    "changeit",
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
];

/// A reference, template, placeholder word or marker: something that is not itself a secret.
fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.is_empty()
        || value.starts_with(MARKER_PREFIX)
        || is_variable_reference(value)
        || (value.starts_with('<') && value.ends_with('>'))
        || (value.starts_with('{') && value.ends_with('}'))
        || (value.len() > 2 && value.starts_with('%') && value.ends_with('%'))
        || ["${", "{{", "}}", "#{", "%(", "%s"]
            .iter()
            .any(|t| value.contains(t))
        || value
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '-' | '_' | '•' | '…'))
        || PLACEHOLDER_WORDS.contains(&lower.as_str())
        || lower.starts_with("your")
        || lower.starts_with("<your")
        || lower.ends_with("_here")
        || lower.ends_with("-here")
}

/// `$VAR`, `${VAR}`, `$(cmd)`: a shell, env-file or CI reference.
fn is_variable_reference(value: &str) -> bool {
    let mut chars = value.chars();
    chars.next() == Some('$')
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '{' | '('))
}

/// Checks shared by quoted and bare values.
fn literal_is_secret(value: &str) -> bool {
    value.chars().count() >= 6
        && !value.chars().any(char::is_whitespace)
        && !is_placeholder(value)
        && !is_credential_name(value)
        && !value.contains("://")
        && !is_path(value)
}

/// `"refresh_token"`, `"X-Api-Key"`, `token=token`: the value names a credential.
fn is_credential_name(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let separated = value.contains(['_', '-', '.']);
    let all_lower = !value.bytes().any(|b| b.is_ascii_uppercase());
    (separated || all_lower)
        && lower
            .bytes()
            .all(|b| b.is_ascii_lowercase() || matches!(b, b'_' | b'-' | b'.'))
        && ["pass", "pwd", "secret", "token", "key", "auth", "cred"]
            .iter()
            .any(|w| lower.contains(w))
}

/// A file path such as `/run/secrets/db`, `./secret.txt` or `~/.token`. Absolute paths must be
/// lower case so that base64 secrets, which may start with `/`, are not taken for paths.
fn is_path(value: &str) -> bool {
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
fn looks_like_code(value: &str) -> bool {
    if value.contains(['(', ')', '[', ']', '{', '}', '<', '>', '|']) {
        return true;
    }
    // `token?` and `self.next_token?`: Rust's `?` on a variable.
    let tried = value.strip_suffix('?');
    let normalized = tried.unwrap_or(value).replace("::", ".").replace("->", ".");
    let mut parts = normalized.split('.');
    let is_ident = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
    };
    (normalized.contains('.') || tried.is_some()) && parts.all(is_ident)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Masks `input` and compares with `expected`; `None` means "unchanged and borrowed".
    /// Every case is also checked for idempotence.
    #[track_caller]
    fn check(masker: &Masker, input: &str, expected: Option<&str>) {
        let (masked, counts) = masker.mask(input);
        match expected {
            None => {
                assert!(
                    matches!(masked, Cow::Borrowed(_)),
                    "expected no change for {input:?}, got {masked:?}"
                );
                assert!(
                    counts.is_empty(),
                    "expected no counts for {input:?}, got {counts:?}"
                );
            }
            Some(expected) => {
                assert_eq!(masked, expected, "masking {input:?}");
                assert!(!counts.is_empty());
            }
        }
        let (again, again_counts) = masker.mask(&masked);
        assert_eq!(again, masked, "masking is not idempotent for {input:?}");
        assert!(matches!(again, Cow::Borrowed(_)));
        assert!(
            again_counts.is_empty(),
            "second pass counted {again_counts:?} for {input:?}"
        );
    }

    /// (kind, input, expected output or `None` for a near miss that must stay unchanged).
    /// Positive cases must produce exactly one redaction of `kind`.
    const CASES: &[(&str, &str, Option<&str>)] = &[
        // private_key
        (
            "private_key",
            "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAfakefakefakefakefake0123\nZmFrZWtleWZha2VrZXlmYWtla2V5ZmFrZWtleQ==\n-----END RSA PRIVATE KEY-----\nnext line\n",
            Some("key:\n[REDACTED:private_key]\nnext line\n"),
        ),
        (
            "private_key",
            r#"{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAAfake\nZmFrZWtleQ==\n-----END PRIVATE KEY-----\n", "x": 1}"#,
            Some(r#"{"private_key": "[REDACTED:private_key]\n", "x": 1}"#),
        ),
        (
            "private_key",
            "-----BEGIN OPENSSH PRIVATE KEY-----\r\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQfake\r\n-----END OPENSSH PRIVATE KEY-----",
            Some("[REDACTED:private_key]"),
        ),
        (
            "private_key",
            "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00FAKE\n\nMHcCAQEEIFAKEfakeFAKEfake0123456789\nMoreFakeBase64Lines0123456789abcd",
            Some("[REDACTED:private_key]"),
        ),
        (
            "private_key",
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAAfake\nZmFrZWtleWZha2VrZXlmYWtla2V5\n-----END PRIVATE KEY-----\ntail",
            Some("[REDACTED:private_key]\ntail"),
        ),
        (
            "private_key",
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgfake\n-----END PUBLIC KEY-----\n",
            None,
        ),
        (
            "private_key",
            "const BEGIN: &str = \"-----BEGIN RSA PRIVATE KEY-----\";\nconst END: &str = \"-----END RSA PRIVATE KEY-----\";\n",
            None,
        ),
        // anthropic_api_key
        (
            "anthropic_api_key",
            "ANTHROPIC_API_KEY=sk-ant-api03-FAKEfake0123456789FAKEfake0123456789-abcdAA\n",
            Some("ANTHROPIC_API_KEY=[REDACTED:anthropic_api_key]\n"),
        ),
        (
            "anthropic_api_key",
            "client = Anthropic(api_key=\"sk-ant-admin01-FAKEfake0123456789FAKEfake\")",
            Some("client = Anthropic(api_key=\"[REDACTED:anthropic_api_key]\")"),
        ),
        ("anthropic_api_key", "prefix is sk-ant-short", None),
        // openai_api_key
        (
            "openai_api_key",
            "OPENAI_API_KEY=sk-proj-FAKEfake0123456789FAKEfake0123456789abcd",
            Some("OPENAI_API_KEY=[REDACTED:openai_api_key]"),
        ),
        (
            "openai_api_key",
            "openai.api_key = \"sk-FAKEfake0123456789FAKET3BlbkFJfake0123456789abcd\"",
            Some("openai.api_key = \"[REDACTED:openai_api_key]\""),
        ),
        (
            "openai_api_key",
            "<div class=\"sk-some-long-css-class-name-without-digits\">",
            None,
        ),
        (
            "openai_api_key",
            "task-FAKEfake0123456789FAKEfake0123456789abcd",
            None,
        ),
        // aws_access_key_id
        (
            "aws_access_key_id",
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n",
            Some("aws_access_key_id = [REDACTED:aws_access_key_id]\n"),
        ),
        (
            "aws_access_key_id",
            r#"{"AccessKeyId": "ASIAY34FZKBOKMUTVV7A"}"#,
            Some(r#"{"AccessKeyId": "[REDACTED:aws_access_key_id]"}"#),
        ),
        (
            "aws_access_key_id",
            "id AKIAIOSFODNN7EXAMPLEX and AKIA1234567890123456",
            None,
        ),
        // aws_secret_access_key
        (
            "aws_secret_access_key",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
            Some("aws_secret_access_key = [REDACTED:aws_secret_access_key]\n"),
        ),
        (
            "aws_secret_access_key",
            r#""SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY","#,
            Some(r#""SecretAccessKey": "[REDACTED:aws_secret_access_key]","#),
        ),
        (
            "aws_secret_access_key",
            "checksum = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            None,
        ),
        (
            "aws_secret_access_key",
            "AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}",
            None,
        ),
        // github_token
        (
            "github_token",
            "token = \"ghp_FAKEfake0123456789FAKEfake0123456789\"",
            Some("token = \"[REDACTED:github_token]\""),
        ),
        (
            "github_token",
            "git clone https://x-access-token:ghs_FAKEfake0123456789FAKEfake0123456789@github.com/o/r",
            Some("git clone https://x-access-token:[REDACTED:github_token]@github.com/o/r"),
        ),
        (
            "github_token",
            "use github_pat_11FAKEFAKE0123456789ab_FAKEfake0123456789FAKEfake0123456789 here",
            Some("use [REDACTED:github_token] here"),
        ),
        (
            "github_token",
            "ghp_short and ghx_FAKEfake0123456789FAKEfake0123456789",
            None,
        ),
        // gitlab_token
        (
            "gitlab_token",
            "GITLAB_TOKEN: glpat-FAKEfake0123456789ab\n",
            Some("GITLAB_TOKEN: [REDACTED:gitlab_token]\n"),
        ),
        (
            "gitlab_token",
            "curl --header \"PRIVATE-TOKEN: glpat-FAKE_fake-0123456789xyz\" https://gitlab.example.com",
            Some(
                "curl --header \"PRIVATE-TOKEN: [REDACTED:gitlab_token]\" https://gitlab.example.com",
            ),
        ),
        ("gitlab_token", "see glpat-short for details", None),
        // slack_token
        (
            "slack_token",
            "SLACK_BOT_TOKEN=xoxb-1234567890-1234567890123-FAKEfakeFAKEfakeFAKEfake",
            Some("SLACK_BOT_TOKEN=[REDACTED:slack_token]"),
        ),
        (
            "slack_token",
            "app token xapp-1-A0FAKE0FAKE-1234567890123-fakefakefakefake0123 ok",
            Some("app token [REDACTED:slack_token] ok"),
        ),
        (
            "slack_token",
            "export SLACK_TOKEN=\"xoxb-your-bot-token\"",
            None,
        ),
        // stripe_key
        (
            "stripe_key",
            "Stripe.api_key = 'sk_live_FAKEfake0123456789FAKEfake'",
            Some("Stripe.api_key = '[REDACTED:stripe_key]'"),
        ),
        (
            "stripe_key",
            "STRIPE_RESTRICTED=rk_live_FAKEfake0123456789FAKEfake",
            Some("STRIPE_RESTRICTED=[REDACTED:stripe_key]"),
        ),
        (
            "stripe_key",
            "test mode uses sk_test_FAKEfake0123456789FAKEfake",
            None,
        ),
        // google_api_key
        (
            "google_api_key",
            "const key = \"AIzaSyFAKE-fake_0123456789abcdefghijklm\";",
            Some("const key = \"[REDACTED:google_api_key]\";"),
        ),
        (
            "google_api_key",
            "https://maps.googleapis.com/maps/api/js?key=AIzaSyFAKE-fake_0123456789abcdefghijklm&callback=x",
            Some(
                "https://maps.googleapis.com/maps/api/js?key=[REDACTED:google_api_key]&callback=x",
            ),
        ),
        (
            "google_api_key",
            "AIzaSyFAKE-fake_0123456789abcdefghijkl is one short",
            None,
        ),
        // jwt
        (
            "jwt",
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.fakeSignature0123456789\n",
            Some("Authorization: Bearer [REDACTED:jwt]\n"),
        ),
        (
            "jwt",
            "{\"id_token\": \"eyJhbGciOiJub25lIn0.eyJzdWIiOiJmYWtlIn0.\"}",
            Some("{\"id_token\": \"[REDACTED:jwt]\"}"),
        ),
        (
            "jwt",
            "the header eyJhbGciOiJIUzI1NiJ9 alone is not a token",
            None,
        ),
        // connection_string_password
        (
            "connection_string_password",
            "DATABASE_URL=postgres://app:s3cr3tPass@db.internal:5432/app",
            Some(
                "DATABASE_URL=postgres://app:[REDACTED:connection_string_password]@db.internal:5432/app",
            ),
        ),
        (
            "connection_string_password",
            "uri = \"mongodb+srv://admin:Fake%40Pass1@cluster0.example.net/?retryWrites=true\"",
            Some(
                "uri = \"mongodb+srv://admin:[REDACTED:connection_string_password]@cluster0.example.net/?retryWrites=true\"",
            ),
        ),
        (
            "connection_string_password",
            "REDIS_URL=redis://:fakepass123@localhost:6379/0",
            Some("REDIS_URL=redis://:[REDACTED:connection_string_password]@localhost:6379/0"),
        ),
        (
            "connection_string_password",
            "postgres://app@db.internal/app and http://localhost:8080/x@y",
            None,
        ),
        (
            "connection_string_password",
            "url: mysql://root:${MYSQL_ROOT_PASSWORD}@db:3306/app",
            None,
        ),
        (
            "connection_string_password",
            "amqp://user:password@localhost:5672/",
            None,
        ),
        (
            "connection_string_password",
            "/// format: scheme://[user[:password]@]host[:port]/path",
            None,
        ),
        // password_assignment
        (
            "password_assignment",
            "password = \"hunter2\"",
            Some("password = \"[REDACTED:password_assignment]\""),
        ),
        (
            "password_assignment",
            "DB_PASSWORD=s3cr3t!pass\n",
            Some("DB_PASSWORD=[REDACTED:password_assignment]\n"),
        ),
        (
            "password_assignment",
            r#"{"client_secret": "fake-secret-0123", "client_id": "abc"}"#,
            Some(r#"{"client_secret": "[REDACTED:password_assignment]", "client_id": "abc"}"#),
        ),
        (
            "password_assignment",
            "  api_key: abc123def456\n",
            Some("  api_key: [REDACTED:password_assignment]\n"),
        ),
        (
            "password_assignment",
            "GET /cb?access_token=abc123xyz&state=1",
            Some("GET /cb?access_token=[REDACTED:password_assignment]&state=1"),
        ),
        (
            "password_assignment",
            "Server=db;User Id=sa;Password=FakePassword;Encrypt=true",
            Some("Server=db;User Id=sa;Password=[REDACTED:password_assignment];Encrypt=true"),
        ),
        (
            "password_assignment",
            "  POSTGRES_PASSWORD: postgres\n",
            Some("  POSTGRES_PASSWORD: [REDACTED:password_assignment]\n"),
        ),
        (
            "password_assignment",
            "String secretKey = \"Zm9vYmFyYmF6\";",
            Some("String secretKey = \"[REDACTED:password_assignment]\";"),
        ),
        (
            "password_assignment",
            "mysql --user=root --password=Fake#Pass9 db",
            Some("mysql --user=root --password=[REDACTED:password_assignment] db"),
        ),
        (
            "password_assignment",
            "'token' => 'FAKEfake0123',",
            Some("'token' => '[REDACTED:password_assignment]',"),
        ),
        ("password_assignment", "password = get_password()", None),
        ("password_assignment", "token = self.token", None),
        (
            "password_assignment",
            "const token = process.env.API_TOKEN;",
            None,
        ),
        (
            "password_assignment",
            "password = os.environ[\"DB_PASSWORD\"]",
            None,
        ),
        ("password_assignment", "token := os.Getenv(\"TOKEN\")", None),
        (
            "password_assignment",
            "password: ${DB_PASSWORD}\nsecret: $SECRET_VALUE\n",
            None,
        ),
        (
            "password_assignment",
            "password = \"<your-password>\"\napi_key: YOUR_API_KEY\n",
            None,
        ),
        (
            "password_assignment",
            "password: changeme\nsecret = \"********\"\n",
            None,
        ),
        (
            "password_assignment",
            "password = None\ntoken = null\nsecret: \"\"\n",
            None,
        ),
        (
            "password_assignment",
            "password = \"[REDACTED:password_assignment]\"",
            None,
        ),
        (
            "password_assignment",
            "max_tokens: 100000\nmax_token = 100000\n",
            None,
        ),
        (
            "password_assignment",
            "fn new(token: &str, secret: Option<String>) {}",
            None,
        ),
        (
            "password_assignment",
            "    token: Token,\n    password: String,\n",
            None,
        ),
        (
            "password_assignment",
            "def login(password: str) -> None:",
            None,
        ),
        (
            "password_assignment",
            "if password == \"hunter22\" {}",
            None,
        ),
        ("password_assignment", "let kind = token::Kind;", None),
        (
            "password_assignment",
            "grant = {\"token_type\": \"refresh_token\", \"header\": \"X-Api-Key\"}",
            None,
        ),
        (
            "password_assignment",
            "password = \"Enter your password\"",
            None,
        ),
        (
            "password_assignment",
            "PWD=/home/user/project\nsecret_file: /run/secrets/db\n",
            None,
        ),
        (
            "password_assignment",
            "Token: the bearer credential for requests",
            None,
        ),
        ("password_assignment", "password = user_password", None),
        (
            "password_assignment",
            "pub const IFLA_INET6_TOKEN: _bindgen_ty_7 = _bindgen_ty_7::IFLA_INET6_TOKEN;\nstatic NEXT_TOKEN: AtomicUsize = AtomicUsize::new(1);",
            None,
        ),
        (
            "password_assignment",
            "let mut add_token = |token: &Token| {};\npToken: *const c_char,",
            None,
        ),
        (
            "password_assignment",
            "let token = token?;\nlet mut token = self.next_token?;",
            None,
        ),
        (
            "password_assignment",
            "pExpr->u.zToken = \"coalesce\";\nnToken = iEnd-iStart;",
            None,
        ),
    ];

    #[test]
    fn rule_table() {
        let masker = Masker::new();
        for &(kind, input, expected) in CASES {
            check(&masker, input, expected);
            if expected.is_some() {
                let (_, counts) = masker.mask(input);
                assert_eq!(counts.len(), 1, "{input:?} counted {counts:?}");
                assert_eq!(counts.get(kind), Some(&1), "{input:?} counted {counts:?}");
            }
        }
    }

    #[test]
    fn every_rule_has_two_positives_and_a_near_miss() {
        for rule in Masker::new().rules() {
            let cases = CASES.iter().filter(|(kind, _, _)| *kind == rule.kind);
            let positives = cases.clone().filter(|(_, _, e)| e.is_some()).count();
            let negatives = cases.filter(|(_, _, e)| e.is_none()).count();
            assert!(
                positives >= 2,
                "{} has {positives} positive cases",
                rule.kind
            );
            assert!(negatives >= 1, "{} has no near-miss case", rule.kind);
        }
    }

    #[test]
    fn every_kind_is_documented_and_snake_case() {
        let source = include_str!("mask.rs");
        for rule in Masker::new().rules() {
            assert!(
                source.contains(&format!("//! | `{}` |", rule.kind)),
                "{} missing from the table",
                rule.kind
            );
            assert!(
                rule.kind
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_')
            );
            assert!(!rule.description.is_empty());
        }
    }

    #[test]
    fn more_specific_rule_wins_and_counts_once() {
        let masker = Masker::new();
        let (masked, counts) = masker.mask("token = \"ghp_FAKEfake0123456789FAKEfake0123456789\"");
        assert_eq!(masked, "token = \"[REDACTED:github_token]\"");
        assert_eq!(counts, BTreeMap::from([("github_token".to_owned(), 1)]));
        let (masked, counts) =
            masker.mask("aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
        assert_eq!(
            masked,
            "aws_secret_access_key: [REDACTED:aws_secret_access_key]"
        );
        assert_eq!(counts.len(), 1);
    }

    #[test]
    fn counts_several_secrets_by_kind() {
        let input = "\
GITHUB_TOKEN=ghp_FAKEfake0123456789FAKEfake0123456789
BACKUP_TOKEN=ghp_0123456789FAKEfake0123456789FAKEfake
AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE
DB_PASSWORD=s3cr3t!pass
DATABASE_URL=postgres://app:s3cr3tPass@db:5432/app
";
        let (masked, counts) = Masker::new().mask(input);
        assert_eq!(
            masked,
            "\
GITHUB_TOKEN=[REDACTED:github_token]
BACKUP_TOKEN=[REDACTED:github_token]
AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id]
DB_PASSWORD=[REDACTED:password_assignment]
DATABASE_URL=postgres://app:[REDACTED:connection_string_password]@db:5432/app
"
        );
        let expected: BTreeMap<String, u64> = [
            ("aws_access_key_id", 1),
            ("connection_string_password", 1),
            ("github_token", 2),
            ("password_assignment", 1),
        ]
        .into_iter()
        .map(|(k, n)| (k.to_owned(), n))
        .collect();
        assert_eq!(counts, expected);
    }

    #[test]
    fn ordinary_text_is_borrowed() {
        let masker = Masker::default();
        for input in [
            "",
            "fn main() {\n    println!(\"hello\");\n}\n",
            "See https://example.com/docs for the token format.",
            "let tokens = lexer.tokenize(&source)?;",
            "日本語のテキスト – no secrets here ✓",
        ] {
            check(&masker, input, None);
        }
    }

    /// Deterministic noise: random mixtures of secret fragments, punctuation and multi-byte
    /// characters.
    fn noise_texts(count: usize) -> Vec<String> {
        const PIECES: &[&str] = &[
            "password",
            "token",
            "secret",
            "api_key",
            "=",
            ":",
            " ",
            "\"",
            "'",
            "\n",
            "\\n",
            "$",
            "{",
            "}",
            "(",
            ")",
            ".",
            ",",
            ";",
            "&",
            "@",
            "://",
            "postgres",
            "user",
            "hunter2",
            "AKIA",
            "IOSFODNN7EXAMPLE",
            "ghp_",
            "FAKEfake0123456789",
            "sk-",
            "sk-ant-",
            "eyJ",
            "abcdefgh",
            "-----BEGIN RSA PRIVATE KEY-----",
            "-----END RSA PRIVATE KEY-----",
            "MIIEpAIBAAKCAQEAfake0123",
            "é",
            "日本",
            "🦀",
            "[REDACTED:",
            "]",
            "xoxb-",
            "glpat-",
            "AIza",
            "sk_live_",
            "==",
            "::",
            "DB_PASSWORD",
            "\r\n",
            "/",
            "+",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize
        };
        (0..count)
            .map(|_| {
                let len = next() % 24;
                (0..len).map(|_| PIECES[next() % PIECES.len()]).collect()
            })
            .collect()
    }

    #[test]
    fn never_panics_and_is_idempotent_on_noise() {
        let masker = Masker::new();
        let mut masked_some = 0;
        for text in noise_texts(5000) {
            let (once, counts) = masker.mask(&text);
            masked_some += usize::from(!counts.is_empty());
            let (twice, counts) = masker.mask(&once);
            assert_eq!(twice, once, "not idempotent on {text:?}");
            assert!(
                counts.is_empty(),
                "second pass counted {counts:?} on {text:?}"
            );
        }
        assert!(
            masked_some > 100,
            "the noise exercised masking only {masked_some} times"
        );
    }

    /// Skipping a rule whose prefilter literal is absent must never change the result: wherever a
    /// rule's expression finds a secret, its prefilter pattern occurs too.
    #[test]
    fn prefilter_is_a_necessary_condition() {
        let masker = Masker::new();
        let noise = noise_texts(2000);
        let inputs = CASES
            .iter()
            .map(|&(_, input, _)| input)
            .chain(noise.iter().map(String::as_str));
        for input in inputs {
            let set = masker.prefilter.matches(input);
            for (index, rule) in masker.rules().iter().enumerate() {
                if rule.apply(input).is_some() {
                    assert!(
                        set.matched(index),
                        "{} matched {input:?} without its prefilter",
                        rule.kind
                    );
                }
            }
        }
    }
}
