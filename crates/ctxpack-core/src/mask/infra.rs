//! Credentials known by where infrastructure tools keep them: the passwords a Terraform state
//! records for the `random_password` resources it generated, Consul's ACL tokens, which are
//! UUIDs and so would read as ids anywhere else, the values of a Kubernetes Secret's `data`, and
//! a CI variable's personal access token (`…_PAT`).

use super::*;

/// The rules keyed on the block a value stands in rather than on its name, run after every
/// other (a `.dockerconfigjson` or a `tls.key` in a Secret's data is `registry_auth`'s or
/// `private_key`'s).
pub(super) const LATE_INFRA_SPECS: &[Spec] = &[Spec {
    kind: "password_assignment",
    description: "a value of a Kubernetes Secret's data block (base64, under any key) in a manifest that says kind: Secret",
    prefilter: r"kind:[ \t]*Secret[ \t]*\r?\n",
    pattern: r#"(?m)^(?P<i>[ \t]+)[A-Za-z0-9_.-]+:[ \t]*["']?(?P<s>[A-Za-z0-9+/]{8,}={0,2})["']?[ \t]*\r?$"#,
    locate: kubernetes_secret_data,
}];

/// How far before a Terraform state's `"result"` its resource's `"type"` is looked for: a
/// resource's attributes come before its next resource's type, and a `random_password`'s fit
/// in far less.
const STATE_WINDOW: usize = 4 << 10;

/// The `"result"` of a `random_password` resource in a Terraform state: the last `"type"`
/// before it, within [`STATE_WINDOW`], declares that resource (a `random_string`'s or
/// `random_id`'s result is left: those name things as often as they guard them).
pub(super) fn terraform_generated(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let from = hay.floor_char_boundary(m.start().saturating_sub(STATE_WINDOW));
    let before = &hay[from..m.start()];
    let at = before.rfind("\"type\"")?;
    let declared = before[at + "\"type\"".len()..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    (declared.starts_with("\"random_password\"") && literal_is_secret(m.as_str())).then(|| span(m))
}

/// Consul's token settings whose names say nothing outside an `acl { tokens { … } }` block:
/// a UUID under them is a token only there.
const BLOCK_ONLY_TOKEN_NAMES: &[&str] = &["agent", "default", "dns", "master", "replication"];

/// How far before a token setting the `tokens` block that holds it may open.
const TOKENS_BLOCK_WINDOW: usize = 1 << 10;

/// A Consul ACL token: a UUID given to one of Consul's token settings (`initial_management`,
/// `agent_recovery`, the legacy `acl_*_token`s, `CONSUL_HTTP_TOKEN`), or to a generic one
/// (`agent`, `default`, …) inside a `tokens` block. A UUID of one digit repeated but for one or
/// two is a placeholder or a well-known id (the anonymous token's `00000000-…-000000000002`).
pub(super) fn consul_token(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let name = caps.name("k")?.as_str();
    if BLOCK_ONLY_TOKEN_NAMES.contains(&name) {
        let from = hay.floor_char_boundary(m.start().saturating_sub(TOKENS_BLOCK_WINDOW));
        let before = &hay[from..m.start()];
        // The block opens after the word (`tokens {`, `"tokens": {`) and is still open.
        let inside = before.rfind("tokens").is_some_and(|at| {
            let rest = before[at + "tokens".len()..].trim_start_matches(['"', ' ', '\t', ':', '=']);
            rest.strip_prefix('{')
                .is_some_and(|block| !block.contains('}'))
        });
        if !inside {
            return None;
        }
    }
    let digits = m.as_str().bytes().filter(u8::is_ascii_hexdigit);
    let most = b"0123456789abcdef"
        .iter()
        .map(|d| digits.clone().filter(|c| c.eq_ignore_ascii_case(d)).count())
        .max()
        .unwrap_or(0);
    (most + 2 < 32).then(|| span(m))
}

/// How far around a value of a Secret's `data` its block's `data:` and the manifest's `kind:
/// Secret` are looked for: a Secret's entries are a line each (a certificate's a few KiB), and
/// every match looks only this far, so a text of many such lines costs time in proportion. A
/// value further below its `data:` than this (after a hundred short entries) is left.
const SECRET_DATA_WINDOW: usize = 4 << 10;

/// A value of a Kubernetes `Secret`'s `data` block (base64 of the secret, whatever its key is
/// named: `signing_material: aDBO…`): the line's block opens with `data:`, in a YAML document
/// (between `---` lines) that says `kind: Secret`, both within [`SECRET_DATA_WINDOW`]. A
/// `SealedSecret`'s `encryptedData` is ciphertext meant to be committed, and `stringData` is
/// read by the rules for names.
pub(super) fn kubernetes_secret_data(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let line = caps.get(0)?.start();
    let indent = caps.name("i")?.as_str().len();
    let from = hay.floor_char_boundary(line.saturating_sub(SECRET_DATA_WINDOW));
    let to = hay.ceil_char_boundary(line.saturating_add(SECRET_DATA_WINDOW).min(hay.len()));
    let start = hay[from..line]
        .rfind("\n---")
        .map_or(from, |at| from + at + 4);
    let end = hay[line..to].find("\n---").map_or(to, |at| line + at);
    if !hay[start..end]
        .lines()
        .any(|l| l.trim_end() == "kind: Secret")
    {
        return None;
    }
    let indent_of = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let parent = hay[start..line]
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty() && indent_of(l) < indent)?;
    let v = m.as_str();
    let base64 = v.len() % 4 == 0 && !is_placeholder(v);
    (parent.trim() == "data:" && base64).then(|| span(m))
}

/// A value that looks generated and is no placeholder, under a name the rule's expression
/// already judged (`AZURE_DEVOPS_EXT_PAT`).
pub(super) fn generated_value(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let v = m.as_str();
    (literal_is_secret(v) && looks_generated(v) && !is_word_list(v)).then(|| span(m))
}
