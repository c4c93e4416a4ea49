//! Where a rule's match holds the secret, or that it holds none: one function per shape of
//! rule, given the match and the text around it.

use super::*;

/// The range of a capture group.
pub(super) fn span(m: regex::Match<'_>) -> (usize, usize) {
    (m.start(), m.end())
}

/// The `s` group is the secret.
pub(super) fn group_s(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    caps.name("s").map(span)
}

/// A vendor token in the `s` group, unless it is an obvious stand-in (`ghp_xxxx…`,
/// `T00000000/B00000000/XXXXXXXX`, `sk_live_your_key_here`).
pub(super) fn vendor_token(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    (!is_stand_in(m.as_str())).then(|| span(m))
}

/// The first of the `s`, `t` and `u` groups that matched, as a vendor token.
pub(super) fn either_vendor_group(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps
        .name("s")
        .or_else(|| caps.name("t"))
        .or_else(|| caps.name("u"))?;
    (!is_stand_in(m.as_str())).then(|| span(m))
}

/// A token-shaped stand-in rather than a token: elided (`xxxx`, `****`, `...`), a hint to the
/// reader (`your`, `replace`, `here`), or a tail of one or two repeated characters.
pub(super) fn is_stand_in(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    if is_elided(token)
        || ["your", "replace", "_here", "-here", "placeholder"]
            .iter()
            .any(|w| lower.contains(w))
    {
        return true;
    }
    let tail: Vec<char> = token.chars().rev().take(16).collect();
    let mut distinct = tail.clone();
    distinct.sort_unstable();
    distinct.dedup();
    tail.len() >= 8 && distinct.len() <= 3
}

/// Elided: a run of `x`, `X`, `*` or `•`, or an ellipsis.
pub(super) fn is_elided(value: &str) -> bool {
    ["xxxx", "XXXX", "****", "•••", "...", "…"]
        .iter()
        .any(|run| value.contains(run))
}

/// Private-key blocks are masked whole; a PuTTY key's private lines and a base64-encoded PEM
/// file only when they hold a private key.
pub(super) fn private_key(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    if let Some(m) = caps.name("ppk") {
        return Some(span(m));
    }
    if let Some(m) = caps.name("b64") {
        // 64 base64 characters decode to 48 bytes, enough for the longest BEGIN line.
        let head = m.as_str().get(..64).unwrap_or(m.as_str());
        let decoded = decode_base64(head)?;
        let text = String::from_utf8_lossy(&decoded);
        return text.contains("PRIVATE KEY").then(|| span(m));
    }
    caps.get(0).map(span)
}

/// Real `sk-` keys are random base62: demanding upper case, lower case and a digit keeps
/// `sk-some-long-css-class-name` and similar identifiers out.
pub(super) fn openai(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let body = caps.name("b")?.as_str();
    let mixed = body.bytes().any(|b| b.is_ascii_uppercase())
        && body.bytes().any(|b| b.is_ascii_lowercase())
        && body.bytes().any(|b| b.is_ascii_digit());
    if mixed { vendor_token(caps, hay) } else { None }
}

/// Tokens of random letters mix cases; `hf_all_lower_case_identifier_names` does not.
pub(super) fn mixed_case(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let body = caps.name("b")?.as_str();
    let mixed = body.bytes().any(|b| b.is_ascii_uppercase())
        && body.bytes().any(|b| b.is_ascii_lowercase());
    if mixed { vendor_token(caps, hay) } else { None }
}

/// Slack tokens carry numeric workspace and user ids; `xoxb-your-bot-token` does not.
pub(super) fn slack(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let token = caps.name("s")?.as_str();
    if token.bytes().any(|b| b.is_ascii_digit()) {
        vendor_token(caps, hay)
    } else {
        None
    }
}

pub(super) fn connection_password(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    if let Some(m) = caps.name("s") {
        return (!is_placeholder(m.as_str())).then(|| span(m));
    }
    // A `;Password=…;` value `password_assignment` left, or a DSN's or Bundler's: people's
    // passwords, but not `myPassword`, the stand-in of every connection-string page.
    let m = caps
        .name("a")
        .or_else(|| caps.name("t"))
        .or_else(|| caps.name("b"))
        .or_else(|| caps.name("c"))?;
    let v = m.as_str();
    (v.chars().count() >= 4 && !is_placeholder(v) && !is_credential_name(v)).then(|| span(m))
}

/// After `Authorization:` with a scheme, a generated-looking value; without a scheme (a raw key
/// as the header value) or after a bare `Bearer`, one that also mixes letters and digits, so
/// that `authorization: disabled` and "bearer authentication" stay.
pub(super) fn authorization(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let (m, with_scheme) = match (caps.name("s"), caps.name("b")) {
        (Some(m), _) => (m, caps.name("scheme").is_some()),
        (None, Some(m)) => (m, false),
        (None, None) => return None,
    };
    let value = m.as_str();
    // Credentials are generated (`Bearer blahblahblah` in a comment is a stand-in).
    let generated = literal_is_secret(value)
        && !looks_like_code(value)
        && looks_generated(value)
        && !is_word_list(value);
    // `Basic dXNlcm5hbWU6cGFzc3dvcmQ=` is `username:password`: a documented stand-in.
    let basic = caps
        .name("scheme")
        .is_some_and(|s| s.as_str().eq_ignore_ascii_case("basic"));
    if basic && decodes_to_placeholder_password(value) {
        return None;
    }
    let ok = if with_scheme {
        generated
    } else {
        generated
            && value.bytes().any(|b| b.is_ascii_digit())
            && value.bytes().any(|b| b.is_ascii_alphabetic())
    };
    ok.then(|| span(m))
}

/// The password of a command line; quotes around it are kept.
pub(super) fn cli_password(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = [
        "s", "m", "r", "p", "q", "t", "u", "e", "d", "l", "o", "w", "x",
    ]
    .iter()
    .find_map(|name| caps.name(name))?;
    let ((start, end), value) = unquote(m);
    // `curl -u user:api_token`: the name of what goes there.
    let named = is_credential_name(value);
    (!value.is_empty() && !is_placeholder(value) && !named).then_some((start, end))
}

/// Whether base64 `value` decodes to `user:password` with a placeholder password.
pub(super) fn decodes_to_placeholder_password(value: &str) -> bool {
    decode_base64(value)
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| {
            text.split_once(':')
                .map(|(_, password)| is_placeholder(password))
        })
        .unwrap_or(false)
}

/// The span inside one pair of matching quotes, or the whole match, and the text it holds.
pub(super) fn unquote(m: regex::Match<'_>) -> ((usize, usize), &str) {
    let value = m.as_str();
    let quoted = value.len() >= 2
        && ((value.starts_with('"') && value.ends_with('"'))
            || (value.starts_with('\'') && value.ends_with('\'')));
    if quoted {
        ((m.start() + 1, m.end() - 1), &value[1..value.len() - 1])
    } else {
        ((m.start(), m.end()), value)
    }
}

/// Docker and npm keep `base64(user:password)`; anything else under `"auth"` (`"oauth2"`,
/// `"basic"`) is a setting.
pub(super) fn registry_auth(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    if let Some(m) = caps.name("d") {
        // A Docker config file holds `"auths"` (or, in `.dockercfg`, hosts with an `"auth"`);
        // a template or an empty config does not decode to one.
        let decoded = decode_base64(m.as_str())?;
        let text = String::from_utf8_lossy(&decoded);
        return (text.contains("\"auth\"") || text.contains("\"password\"")).then(|| span(m));
    }
    let m = caps.name("s").or_else(|| caps.name("t"))?;
    let decoded = decode_base64(m.as_str())?;
    let text = std::str::from_utf8(&decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    let printable = text.chars().all(|c| !c.is_control());
    (printable && !user.is_empty() && !password.is_empty() && !is_placeholder(password))
        .then(|| span(m))
}

/// A URL's user part alone can be a token (`https://TOKEN@host`), and so can the segment after
/// `/token/` or a `key=` / `X-Amz-Signature=` query parameter; user names, words and ids stay.
pub(super) fn url_credential(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let m = caps
        .name("u")
        .or_else(|| caps.name("p"))
        .or_else(|| caps.name("q"))?;
    let value = m.as_str();
    // A Sentry DSN's user part is a client key, public by design (it ships in web pages).
    if caps.name("u").is_some()
        && hay[m.end()..]
            .split(['/', ' ', '"', '\''])
            .next()
            .is_some_and(|host| host.contains("sentry"))
    {
        return None;
    }
    // WeChat's `appid=wx…` is the public id of an app, shown in its login URLs.
    let wechat = caps.name("q").is_some()
        && value.len() == 18
        && value.starts_with("wx")
        && value[2..].bytes().all(|b| b.is_ascii_hexdigit());
    if wechat {
        return None;
    }
    let generated = value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && looks_generated(value)
        && !is_word_list(value)
        && !is_uuid(value);
    (generated && !is_placeholder(value) && !is_stand_in(value)).then(|| span(m))
}

/// A password in the `s` group, without quotes (`.netrc`'s, an OpenVPN inline block's).
pub(super) fn netrc(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let ((start, end), value) = unquote(m);
    (!value.is_empty() && !is_placeholder(value)).then_some((start, end))
}

/// XML element text, `<add key="…" value="…"/>`, `<name>…</name><value>…</value>` (or a
/// Jenkins parameter's `<defaultValue>`) and a secret-named element's `<Value>` child: the name
/// must be secret-named, with a value that passes the same checks as a quoted assignment, or
/// key-named, with a random-looking value (`<add key="PayloadEncryptionKey" value="…"/>`); an
/// element must close with its own name.
pub(super) fn xml_secret(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let (name, value) =
        if let (Some(t), Some(s), Some(c)) = (caps.name("t"), caps.name("s"), caps.name("c")) {
            if t.as_str() != c.as_str() {
                return None;
            }
            (t.as_str(), s)
        } else if let (Some(k), Some(v)) = (caps.name("ak"), caps.name("av")) {
            (k.as_str(), v)
        } else if let Some(k) = caps.name("pn") {
            let v = caps
                .name("pv")
                .or_else(|| caps.name("pt"))
                .or_else(|| caps.name("pw"))?;
            (k.as_str(), v)
        } else if let (Some(k), Some(v)) = (caps.name("wt"), caps.name("wv")) {
            (k.as_str(), v)
        } else {
            if caps.name("ho")?.as_str() != caps.name("hc")?.as_str() {
                return None;
            }
            (caps.name("hn")?.as_str(), caps.name("hv")?)
        };
    pair_value_is_secret(name, value.as_str()).then(|| span(value))
}

/// The lines of a YAML block scalar under a secret-named key: from the first content line to
/// the last line indented at least as deep as it.
pub(super) fn yaml_block(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let human = secret_name(caps.name("k")?.as_str())?;
    let key_indent = caps.name("i")?.as_str().len();
    let header_end = caps.get(0)?.end();
    // The header ends at its line break; the block starts on the next line.
    hay.get(header_end..)?.strip_prefix('\n')?;
    let mut offset = header_end + 1;
    let (mut block_indent, mut start, mut end) = (None, None, None);
    for line in hay[offset..].split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        let indent = content.len() - content.trim_start_matches([' ', '\t']).len();
        if content.trim().is_empty() {
            offset += line.len();
            continue;
        }
        match block_indent {
            None if indent <= key_indent => break,
            None => {
                block_indent = Some(indent);
                start = Some(offset + indent);
            }
            Some(deepest) if indent < deepest => break,
            Some(_) => {}
        }
        end = Some(offset + content.len());
        offset += line.len();
    }
    let (start, end) = (start?, end?);
    let block = &hay[start..end];
    let first = block.lines().next()?.trim();
    let joined: String = block.split_whitespace().collect();
    // One-line prose (`Enter the password …`) is a description, not a value.
    let prose = first.contains([' ', '\t']) && !block.contains('\n');
    let ok = joined.chars().count() >= 6
        && !prose
        && !is_placeholder(first)
        && !is_path(first)
        && !first.contains("://")
        && (human || looks_generated(&joined));
    ok.then_some((start, end))
}

/// `ENV NAME value` / `ARG NAME value` with a secret-named `NAME`.
pub(super) fn dockerfile(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let human = secret_name(caps.name("k")?.as_str())?;
    let m = caps.name("s")?;
    let ((start, end), value) = unquote(m);
    (literal_is_secret(value) && (human || looks_generated(value))).then_some((start, end))
}

/// Decides whether the value of a `name = value` match is a secret; see the module
/// documentation for the reasoning behind each case.
pub(super) fn assignment(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let key = caps.name("k")?.as_str();
    let sep = caps.name("sep")?.as_str();
    let op = sep.trim();
    if op == "==" || op == "::" {
        return None;
    }
    // Passwords are chosen by people and may be plain words; tokens and keys are generated, so
    // a plain word assigned to a `token` is a lexer token or a label, not a credential.
    let human = secret_name(key)?;
    // `arn:aws:secretsmanager:…:secret:prod/db`, `urn:x:token:abc`: a colon-delimited
    // identifier, not a `name: value` pair.
    let start = caps.get(0)?.start();
    // A Ruby symbol key (`:rubygems_api_key: …` in `.gem/credentials`) starts a line.
    let symbol_key = hay[..start]
        .strip_suffix(':')
        .is_some_and(|b| b.is_empty() || b.ends_with(['\n', ' ', '\t']));
    if op == ":" && hay[..start].ends_with(':') && !symbol_key {
        return None;
    }
    // Generated credentials are not words: `"access-1"` or `"progress-test-1"` under a token
    // name is a label in a test.
    let plausible = |v: &str| credible(v, human);
    if is_search_only_key(key, hay, start) {
        return None;
    }
    // `${API_PASS:?API_PASS must be set}`: a shell's parameter expansion, whose default (if any)
    // is `shell_value`'s.
    if hay[..caps.name("k")?.start()].ends_with("${") {
        return None;
    }
    // A random printable key (`SESSION_SECRET=jPdEMw!yUig…(1LVQ…`) holds `%(`, `$` or `)` by
    // chance.
    if let Some(whole) = random_printable_value(caps, hay) {
        return Some(whole);
    }
    // A triple-quoted value is the whole text between its quotes, `#` and `;` included.
    if let Some(triple) = caps.name("tq") {
        return credible(triple.as_str().trim(), human).then(|| span(triple));
    }
    if let Some(quoted) = caps.name("qv") {
        let value = quoted.as_str();
        // `const SERVICE_PASSWORD: &str = "TRUNCATE"` names a protocol string; after a type
        // only a credential-shaped literal (letters and digits, not words) is data.
        if caps.name("ty").is_some() && !looks_credential_shaped(value) {
            return None;
        }
        return plausible(value).then(|| span(quoted));
    }
    let bare = caps.name("bv")?;
    // `pToken[0] = FTS5_MAIN_PREFIX + iIdx`: through an array's index only a literal is data
    // (`char api_token[] = "…"`).
    if hay[caps.name("k")?.end()..caps.name("sep")?.start()].contains('[') {
        return None;
    }
    // `password: Option<String> = None`: after a type, only a string literal is data. But
    // `Password: Gxon25=~l%t` (an e-mail, a YAML value) is no type: a "type" that runs into `=`
    // and on into the value without a space was the value's start.
    if let Some(ty) = caps.name("ty") {
        let joined = &hay[ty.start()..bare.end()];
        let tight = &hay[ty.end()..bare.start()] == "=";
        let value_like = tight
            && joined.bytes().any(|b| b.is_ascii_digit())
            && plausible(joined)
            && !looks_like_code(joined);
        return value_like.then_some((ty.start(), bare.end()));
    }
    // A configuration line's value runs to its end (`password = Arrow&2127&comet` in
    // `.pypirc`): an `&` ends a value only in a URL's query.
    let bare_end =
        if hay[bare.end()..].starts_with('&') && starts_its_line(hay, caps.name("k")?.start()) {
            run_end(hay, bare.start(), |b| b.is_ascii_whitespace()).unwrap_or(bare.end())
        } else {
            bare.end()
        };
    let bare_span = (bare.start(), bare_end);
    let value = &hay[bare.start()..bare_end];
    if !plausible(value) || looks_like_code(value) {
        return None;
    }
    let tight_eq = sep == "=";
    let rest = &hay[bare_end..];
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
    // `$pass = ConvertTo-SecureString "…"`: a command given arguments, not a value (a quote
    // that only closes the string the assignment sits in, `"password = hunter2 "`, is not one).
    let argument = |q: char| {
        after
            .strip_prefix(q)
            .is_some_and(|a| a.split('\n').next().is_some_and(|line| line.contains(q)))
    };
    if !tight_eq
        && after.len() < rest.len()
        && (argument('"') || argument('\'') || after.starts_with('$'))
    {
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
    Some(bare_span)
}

/// The groups of the `code_credential` rules that capture a password given to a call.
const CALL_ARGUMENTS: &[&str] = &["cv", "jv", "gv", "pv", "wv", "sv", "sw", "sr", "pa", "pb"];

/// A password as a call argument or a `define`d constant: at least four characters (people
/// choose short ones), no whitespace, not a placeholder or a credential's name.
pub(super) fn code_credential(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    // `define('DB_PASSWORD', …)`, `define('API_TOKEN', …)`; a key- or salt-named lookup's
    // default (`env('APP_KEY', 'base64:…')`) when it looks random, or its fallback.
    let named = [("k", "dv"), ("fk", "fv"), ("ok", "ov")]
        .iter()
        .find_map(|(k, v)| Some((caps.name(k)?, caps.name(v)?)));
    if let Some((k, m)) = named {
        return named_value_is_secret(k.as_str(), m.as_str()).then(|| span(m));
    }
    let m = CALL_ARGUMENTS.iter().find_map(|g| caps.name(g))?;
    let v = m.as_str();
    let ok = v.chars().count() >= 4
        && !v.chars().any(char::is_whitespace)
        && !is_placeholder(v)
        && !is_credential_name(v);
    ok.then(|| span(m))
}

/// C's `#define NAME "…"`: the macro's name is secret- or key-named and the value generated, since
/// `#define TEST_PASS "PASSED"` or `#define AUTH_TOKEN "Authorization"` name words.
pub(super) fn c_define(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let k = caps.name("k")?.as_str();
    // A key-named macro (`BROKER_AUTH_KEY`) is judged as a token-named one.
    let human = secret_name(k).or_else(|| names_a_key(k).then_some(false))?;
    let m = caps.name("dv")?;
    let v = m.as_str();
    let generated = looks_generated(v) && !is_word_list(v) && (human || !is_camel_words(v));
    (literal_is_secret(v) && generated).then(|| span(m))
}

/// Builder methods named after the credential itself (`.password("…")`, `.clientSecret("…")`).
pub(super) const BUILDER_CREDENTIALS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "clientSecret",
    "secretKey",
    "apiKey",
    "accessKey",
    "accessToken",
    "token",
];

/// `setPassword("…")`, `withPassword("…")` (a setter or a builder's `with…`) and
/// `.password("…")` (a builder): the method's name says what the one string argument is;
/// `getSecret("…")`, `validatePassword("…")` and other verbs take names and inputs.
pub(super) fn setter_credential(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let method = caps.name("m")?.as_str();
    let property = ["set", "with"].iter().find_map(|verb| {
        method
            .strip_prefix(verb)
            .filter(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
    });
    let name = match property {
        Some(rest) => rest,
        None if caps.name("dot").is_some() && BUILDER_CREDENTIALS.contains(&method) => method,
        None => return None,
    };
    let human = secret_name(name)?;
    let m = caps.name("v")?;
    let v = m.as_str();
    credible(v, human).then(|| span(m))
}

/// `define('AUTH_KEY', '…')`: WordPress's keys and salts are random printable strings, which
/// may hold spaces.
pub(super) fn defined_key(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("v")?;
    let v = m.as_str();
    // Sixty-four random printable characters hold `{{` or `%s` now and then: that long and
    // that random, not starting as a template does, a value is no template.
    let random_long = v.chars().count() >= 48
        && !v.starts_with(['{', '$', '%', '<', '#', '@'])
        && v.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
        && entropy(v) >= 4.5;
    ((!is_placeholder(v) && (looks_random(v) || looks_random_printable(v, true))) || random_long)
        .then(|| span(m))
}

/// `- name: DB_PASSWORD` / `value: …`: judged like the value of an assignment to the name.
pub(super) fn name_value(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let name = caps.name("k")?.as_str();
    let m = caps
        .name("qv")
        .or_else(|| caps.name("sv"))
        .or_else(|| caps.name("bv"))?;
    let v = m.as_str();
    if caps.name("bv").is_some() && looks_like_code(v) {
        return None;
    }
    pair_value_is_secret(name, v).then(|| span(m))
}

/// Words that make a quoted string with spaces a message or a prompt, not a passphrase.
pub(super) const MESSAGE_WORDS: &[&str] = &[
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "key",
    "enter",
    "please",
    "invalid",
    "incorrect",
    "wrong",
    "your",
    "the",
    "is",
    "are",
    "must",
    "not",
    "for",
    "to",
    "of",
    "here",
    "failed",
    "error",
    "required",
    "confirm",
];

/// `DB_PASSWORD="correct horse battery staple"` in an env file: a passphrase of a few words,
/// unless it reads as a message (`"Invalid password, try again."`), a template or a stand-in
/// (`"change me"`, `"your token here"`).
pub(super) fn passphrase(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let k = caps.name("k")?.as_str();
    if secret_name(k) != Some(true) {
        return None;
    }
    let m = caps
        .name("qv")
        .or_else(|| caps.name("sv"))
        .or_else(|| caps.name("uv"))?;
    let v = m.as_str();
    let words: Vec<&str> = v.split_whitespace().collect();
    // An env file's quoted value under an upper-case name is data. A YAML or unquoted value may
    // be a label (`password: Mot de passe` in a locale file): it must hold a digit or a symbol,
    // or have an app password's four groups of four letters.
    let sep = caps.name("sep").map(|s| s.as_str());
    let assigned = sep.is_some_and(|s| s.trim() == "=");
    // Unquoted text after a YAML `:` is too often a type or a tag (`secretToken: Record<…>`,
    // `password: !vault |`).
    if caps.name("uv").is_some() && !assigned {
        return None;
    }
    // (`NAME = "…"` with spaces is code as often as a setting: a constant's label or message.)
    let env_style = sep == Some("=")
        && caps.name("uv").is_none()
        && !caps
            .name("k")?
            .as_str()
            .bytes()
            .any(|b| b.is_ascii_lowercase());
    let app_password = words.len() == 4
        && words
            .iter()
            .all(|w| w.len() == 4 && w.bytes().all(|b| b.is_ascii_lowercase()));
    let marked = v
        .bytes()
        .any(|b| b.is_ascii_digit() || (b.is_ascii_punctuation() && b != b'\'' && b != b'-'));
    if !(env_style || app_password || marked) {
        return None;
    }
    let message = words.iter().any(|w| {
        let w = w
            .trim_matches(|c: char| c.is_ascii_punctuation())
            .to_ascii_lowercase();
        MESSAGE_WORDS.contains(&w.as_str())
    });
    let ok = (2..=12).contains(&words.len())
        && v.trim().chars().count() >= 8
        && !message
        && !v.trim_end().ends_with([':', ','])
        // A sentence ends in `.`, `?` or `!`; a passphrase may too, and then it holds a digit,
        // or it is an env file's, under a name that says it is a phrase.
        && (!v.trim_end().ends_with(['.', '?', '!'])
            || v.bytes().any(|b| b.is_ascii_digit())
            || (env_style && k.to_ascii_lowercase().ends_with("passphrase")))
        && !v.contains(['%', '{', '}', '$', '<', '>', '(', ')'])
        && !is_placeholder(v.trim())
        && !is_placeholder(&words.join("_"))
        && !names_a_password(v);
    ok.then(|| span(m))
}

/// A Terraform variable's `default`: a password-like name takes any literal, a token- or
/// key-like one a generated one, as an assignment's would.
pub(super) fn variable_default(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let human = secret_name(caps.name("k")?.as_str())?;
    let m = caps.name("qv")?;
    credible(m.as_str(), human).then(|| span(m))
}

/// A Gradle or Groovy setting written as a call without parentheses (`storePassword '…'`):
/// a secret-named method given one quoted literal, alone on its line, judged like any
/// assigned literal.
pub(super) fn dsl_setting(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let human = secret_name(caps.name("k")?.as_str())?;
    let ((start, end), value) = unquote(caps.name("s")?);
    credible(value, human).then_some((start, end))
}

/// A value a shell gives a name (fish's `set -gx NAME value`, csh's `setenv NAME value`, a
/// `${NAME:-value}` default): under a secret-named name a credible literal, under a key- or
/// salt-named one a random-looking value.
pub(super) fn shell_value(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let (key, m) = match (caps.name("k"), caps.name("s"), caps.name("dk")) {
        (Some(k), Some(s), _) => (k.as_str(), s),
        (_, _, Some(k)) => (k.as_str(), caps.name("dv")?),
        _ => (caps.name("sk")?.as_str(), caps.name("sv")?),
    };
    let ((start, end), value) = unquote(m);
    named_value_is_secret(key, value).then_some((start, end))
}

/// A secret-named directive's value after spaces (`remote_password …`) or a secret-named
/// header's (`proxy_set_header X-Api-Key "…"`), judged like any assigned literal.
pub(super) fn spaced_setting(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    if let Some(m) = ["ha", "hb", "pm", "ps", "sc", "sp"]
        .iter()
        .find_map(|g| caps.name(g))
    {
        return credible(m.as_str(), true).then(|| span(m));
    }
    // A DNS provider's token, or the one string given to `auth(…)` (a Redis password, not a
    // scheme): generated, with a digit.
    if let Some(m) = caps.name("dn").or_else(|| caps.name("ra")) {
        let v = m.as_str();
        return (credible(v, false) && v.bytes().any(|b| b.is_ascii_digit())).then(|| span(m));
    }
    let (key, m) = match (caps.name("k"), caps.name("s")) {
        (Some(k), Some(s)) => (k.as_str(), s),
        _ => (caps.name("hk")?.as_str(), caps.name("hv")?),
    };
    if key.eq_ignore_ascii_case("authorization") {
        return header_credentials(m);
    }
    let human = secret_name(key)?;
    let ((start, end), value) = unquote(m);
    // A table's column (`api_token CHAR(64),`) is a name and its type, not a setting.
    let column = value.ends_with(',') || value.contains(['(', ')']);
    (!column && credible(value, human)).then_some((start, end))
}

/// An `Authorization` header's value set by a server's directive: the credentials after the
/// scheme (`Basic …`, `Bearer …`), not a variable.
fn header_credentials(m: regex::Match<'_>) -> Option<(usize, usize)> {
    let ((start, end), value) = unquote(m);
    let (scheme, credentials) = value.split_once(' ')?;
    let known =
        ["basic", "bearer", "token", "apikey"].contains(&scheme.to_ascii_lowercase().as_str());
    let ok = known
        && credentials.len() >= 8
        && !credentials.contains(' ')
        && !is_placeholder(credentials)
        && looks_generated(credentials);
    ok.then_some((start + scheme.len() + 1, end))
}

/// A flag's value on a command line: a key or token (`--api-key …`), an Erlang cookie
/// (`-setcookie …`) or an `openssl` hex key (`-K …`). Not a list of settings (`id=…,src=…`), a
/// variable or a placeholder. (`-pass pass:…` is `password_assignment`'s.)
pub(super) fn cli_flag(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    if let Some(x) = caps.name("x") {
        return looks_random(x.as_str()).then(|| span(x));
    }
    let human = match caps.name("k") {
        Some(k) => secret_name(k.as_str())?,
        None => true,
    };
    let ((start, end), value) = unquote(caps.name("s")?);
    let settings = value.trim_end_matches('=').contains(['=', ',']);
    (!settings && credible(value, human)).then_some((start, end))
}

/// A key given to a key constructor (`new SecretKeySpec(…decode("…"), "AES")`): it looks
/// random and is no placeholder.
pub(super) fn constructor_key(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let value = m.as_str();
    (!is_placeholder(value)
        && !is_stand_in(value)
        && (looks_random(value) || looks_random_printable(value, false)))
    .then(|| span(m))
}

/// A directive's value (`requirepass …` in `redis.conf`), quotes kept.
pub(super) fn directive(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s").or_else(|| caps.name("r"))?;
    let ((start, end), value) = unquote(m);
    let ok = value.chars().count() >= 4
        && !is_placeholder(value)
        && !is_credential_name(value)
        && (looks_generated(value) || value.chars().count() >= 12);
    ok.then_some((start, end))
}

/// A `.pgpass` line: the host is a name, an address or `*` (not a number, as in a MAC address
/// or a time), the user is a name, and the password is not a placeholder.
pub(super) fn pgpass(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let host = caps.name("h")?.as_str();
    let user = caps.name("u")?.as_str();
    let named = |s: &str| s == "*" || s.bytes().any(|b| b.is_ascii_alphabetic());
    if !(named(host) || host.contains('.') || host.starts_with('[')) || !named(user) {
        return None;
    }
    let m = caps.name("s")?;
    let v = m.as_str();
    (v.chars().count() >= 4 && !is_placeholder(v) && !is_credential_name(v)).then(|| span(m))
}

/// A PgBouncer `userlist.txt` line's password: only in a text whose first line (after blank
/// lines and `;` comments, read no more than 4 KiB in) is such a line too, and only a value a
/// literal could be. An `md5…` or `SCRAM-SHA-256$…` verifier is what PgBouncer stores in
/// place of the password; it is left as `.pgpass`-style files show it.
pub(super) fn userlist(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let head = &hay[..hay.floor_char_boundary(4 << 10)];
    let first = head
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with(';'))?;
    let mut fields = first.split('"');
    let shaped = fields.next() == Some("")
        && fields.next().is_some_and(|user| !user.is_empty())
        && fields
            .next()
            .is_some_and(|gap| !gap.is_empty() && gap.trim().is_empty())
        && fields.next().is_some()
        && fields.next() == Some("")
        && fields.next().is_none();
    let m = caps.name("s")?;
    let v = m.as_str();
    let verifier = v.starts_with("SCRAM-SHA-256$")
        || v.strip_prefix("md5")
            .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    (shaped && !verifier && literal_is_secret(v)).then(|| span(m))
}

/// A Composer `auth.json` token: generated, not a placeholder.
pub(super) fn registry_token(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let v = m.as_str();
    (literal_is_secret(v) && looks_generated(v) && !is_word_list(v)).then(|| span(m))
}
