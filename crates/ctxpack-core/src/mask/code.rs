//! Credentials a program is given in its own code besides an assignment's literal: the default
//! of a command-line flag it defines, a password kept encoded and decoded where it is assigned,
//! and a secret-named header's value set on a request.

use super::*;

/// The rules for these shapes, run after those placed by name ([`super::rules`]).
pub(super) const CODE_SPECS: &[Spec] = &[
    Spec {
        kind: "code_credential",
        description: "the default of a secret-named command-line flag a program defines: add_argument(\"--bind-password\", default=\"...\"), @click.option(\"--token\", default=\"...\")",
        prefilter: r"add_argument[ \t]*\(|click\.option[ \t]*\(",
        pattern: concat!(
            // The flag's last name (`"-p", "--db-password"`), then other keywords, up to the
            // default, in the same call.
            r#"(?:add_argument|click\.option)[ \t]*\(\s*(?:["']-{1,2}[A-Za-z0-9_-]+["'][ \t]*,[ \t]*)*"#,
            r#"["']-{1,2}(?P<k>[A-Za-z0-9_-]+)["'](?:\s*,\s*[A-Za-z_]+[ \t]*=[ \t]*[^,()=\r\n]*?)*"#,
            r#"\s*,\s*default[ \t]*=[ \t]*["'](?P<s>[^"'\\\r\n]*)["']"#,
        ),
        locate: flag_default,
    },
    Spec {
        kind: "password_assignment",
        description: "an encoded literal decoded where a secret-named name is assigned it: BIND_PW = new String(Base64.getDecoder().decode(\"...\")), SMTP_PASSWORD = b64decode(\"...\")",
        prefilter: r"(?:getDecoder\(\)\.decode|b64decode|FromBase64String)[ \t]*\(",
        pattern: concat!(
            r#"(?P<k>[A-Za-z0-9_.]+)["']?\]?[ \t]*(?::[ \t]*[A-Za-z0-9_<>\[\]]+[ \t]*)?=\s*(?:new[ \t]+String[ \t]*\(\s*)?"#,
            r"(?:[A-Za-z_][A-Za-z0-9_]*(?:\(\))?\.){0,3}(?:decode|b64decode|FromBase64String)[ \t]*\(\s*",
            r#"[bu]?["'](?P<s>[A-Za-z0-9+/=_-]{8,})["']"#,
        ),
        locate: decoded_secret,
    },
    Spec {
        kind: "password_assignment",
        description: "the value of a secret-named HTTP header set in code: .header(\"X-Api-Key\", \"...\"), addHeader, setRequestProperty, Go's Header.Set",
        // A quoted secret-named header, a comma and the quoted value.
        prefilter: r#"(?i-u:key|token|secret|auth)["'][ \t]*,[ \t]*["']"#,
        pattern: concat!(
            r"(?-u:\b)(?:header|addHeader|setHeader|setRequestProperty|set|Set|add|Add|append)[ \t]*\(\s*",
            r#"["'](?P<k>[A-Za-z0-9_-]+)["'][ \t]*,[ \t]*["'](?P<s>[^"'\\\s]+)["']"#,
        ),
        locate: header_value,
    },
];

/// The default of a secret-named flag a program defines (Python's
/// `add_argument("--bind-password", default="…")`, Click's `@click.option("--token",
/// default="…")`): the flag's name is the setting's, and its default is judged as a lookup's
/// default is.
pub(super) fn flag_default(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let name = caps.name("k")?.as_str();
    let m = caps.name("s")?;
    named_value_is_secret(name, m.as_str()).then(|| span(m))
}

/// A secret-named name assigned what a decoder makes of a literal (Java's `BIND_PW = new
/// String(Base64.getDecoder().decode("…"))`, Python's `SMTP_PASSWORD = b64decode("…")`): the
/// encoded literal is the secret, only spelt otherwise.
pub(super) fn decoded_secret(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    secret_name(caps.name("k")?.as_str())?;
    let m = caps.name("s")?;
    literal_is_secret(m.as_str()).then(|| span(m))
}

/// A header set in code under a secret-named name (`X-Api-Key`, `X-Auth-Token`): its value is
/// judged as a secret-named lookup's default is. A header named only a key is a protocol's
/// (WebSocket's `Sec-WebSocket-Key` is a public nonce), and `Authorization`'s scheme and
/// credentials are `authorization_header`'s.
pub(super) fn header_value(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let human = secret_name(caps.name("k")?.as_str())?;
    let m = caps.name("s")?;
    credible(m.as_str(), human).then(|| span(m))
}
