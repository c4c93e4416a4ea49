//! The rules as written: each kind's expressions, prefilter and how its secret is located.

use super::tokens::{TOKEN_SPECS, vendor};
use super::*;

/// The words that make a name secret-named, as a regex alternation. `pass` and `pw` are
/// accepted only as whole words of the name (`DB_PASS` and `db.pw`, not `bypass` or `npw`);
/// [`secret_name`] checks that.
macro_rules! secret_word {
    () => {
        r"(?:passwd|password|passphrase|passcode|pass|pwd|pw|psk|secret|token|authtok|api[_.-]?key|access[_.-]?key|private[_.-]?key|license[_.-]?key)"
    };
}

/// The prefilter of every rule keyed on a secret-named name. Prefilters fold case for ASCII
/// only (`(?i-u)`): Unicode folding (`k` also matches the Kelvin sign) makes the set's
/// automaton several times larger and the one pass over every text slower.
macro_rules! secret_word_prefilter {
    () => {
        r"(?i-u)pass|pw|psk|secret|token|authtok|api[_.-]?key|access[_.-]?key|private[_.-]?key|license[_.-]?key"
    };
}

/// The word for "password" in other languages than English, as a regex alternation: ASCII
/// letters fold case, other letters are written in each case a label uses.
macro_rules! foreign_password_word {
    () => {
        concat!(
            r"(?:(?i-u:passwort|kennwort|mot de passe|senha|wachtwoord|passord|adgangskode|salasana|heslo|lozinka|geslo|kata sandi|parola)",
            r"|(?i-u:contrase)(?:ñ|Ñ)(?i-u:a)|(?:l|L)(?:ö|Ö)(?i-u:senord)|(?i-u:has)(?:ł|Ł)(?i-u:o)|(?i-u:jelsz)(?:ó|Ó)",
            r"|(?i-u:parol)ă|(?:ş|Ş)(?i-u:ifre)|(?i-u:m)ật khẩu",
            r"|пароль|Пароль|ПАРОЛЬ|密码|密碼|パスワード|비밀번호|รหัสผ่าน|كلمة المرور|كلمة السر|סיסמה|κωδικός|Κωδικός|पासवर्ड)",
        )
    };
}
pub(super) use foreign_password_word;

/// The rules, in the order they run (more specific first): the tokens known by their shape
/// ([`TOKEN_SPECS`]), then those known by where they stand, in code ([`CODE_SPECS`]), by the
/// block they are in ([`LATE_INFRA_SPECS`]) and in tables. Keep the `mask` module's table in
/// step with them; a test checks that every kind is documented.
pub(super) fn specs() -> impl Iterator<Item = &'static Spec> {
    TOKEN_SPECS
        .iter()
        .chain(PLACED_SPECS)
        .chain(CODE_SPECS)
        .chain(LATE_INFRA_SPECS)
        .chain(TABLE_SPECS)
}

/// The rules that find a secret by what surrounds it: a name, a call, a header, a URL.
const PLACED_SPECS: &[Spec] = &[
    Spec {
        kind: "webhook_url",
        description: "the secret part of a Slack, Discord or Microsoft Teams incoming-webhook URL",
        prefilter: r"hooks\.slack\.com|discord(?:app)?\.com/api/(?:v[0-9]{1,2}/)?webhooks/|/IncomingWebhook/",
        pattern: concat!(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?:[A-Za-z0-9]+/){2,3}",
            // The secret is the last segment; the ids before it are not secrets.
            r"(?P<s>[A-Za-z0-9]{16,64})(?:[^A-Za-z0-9/]|$)",
            r"|discord(?:app)?\.com/api/(?:v[0-9]{1,2}/)?webhooks/[0-9]{15,21}/(?P<t>[A-Za-z0-9_-]{60,80})(?:[^A-Za-z0-9_-]|$)",
            // Teams (`….webhook.office.com/webhookb2/…` and the older `outlook.office.com/webhook/…`):
            // the group and tenant ids before `IncomingWebhook` and the owner id after the
            // secret are ids; the 32-character segment after it is the secret.
            r"|(?:webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook)/[A-Za-z0-9@-]+",
            r"/IncomingWebhook/(?P<u>[A-Za-z0-9]{32})(?:[^A-Za-z0-9]|$)",
        ),
        locate: either_vendor_group,
    },
    Spec {
        kind: "jwt",
        description: "JSON Web Token (eyJ... header, payload and optional signature)",
        prefilter: r"eyJ",
        pattern: r"(?-u:\b)(?P<s>eyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.(?:[A-Za-z0-9_-]{8,}={0,2})?)",
        locate: group_s,
    },
    Spec {
        kind: "azure_storage_key",
        description: "Azure AccountKey= or SharedAccessKey= in a connection string, or a SAS token's sig=",
        prefilter: r"(?i-u)accountkey|sharedaccesskey|sig=",
        pattern: concat!(
            r"(?:^|[^A-Za-z0-9])(?i-u:AccountKey|SharedAccessKey)[ \t]*=[ \t]*",
            r"(?P<s>[A-Za-z0-9+/]{30,}={0,2})(?:[^A-Za-z0-9+/=]|$)",
            r#"|[?&;](?:sv|sp|se|sr|ss|srt|st|spr|skoid)=[^\s"'<>#]*?&sig=(?P<t>[A-Za-z0-9%+/=]{16,})"#,
        ),
        locate: either_vendor_group,
    },
    Spec {
        kind: "authorization_header",
        description: "credentials in an Authorization header (Bearer, Basic, Token, ...) or after a bare Bearer",
        prefilter: r"(?i-u)authorization|bearer",
        pattern: concat!(
            r#"(?:^|[^A-Za-z0-9-])(?i-u:(?:proxy-)?authorization)["']?[ \t]*[:=][ \t]*["']?"#,
            r"(?:(?P<scheme>(?i-u:bearer|basic|token|bot|apikey|api-key|sso-key|key|digest|ssws))[ \t]+)?",
            r"(?P<s>[A-Za-z0-9._~+/:=-]{8,})",
            r"|(?:^|[^A-Za-z0-9_])(?:Bearer|bearer|BEARER)[ \t]+(?P<b>[A-Za-z0-9._~+/-]{20,}=*)",
        ),
        locate: authorization,
    },
    Spec {
        kind: "cli_password",
        description: "a password on a command line: curl/httpie -u user:PASS, mysql -pPASS, redis-cli -a PASS, sshpass -p PASS",
        prefilter: r"(?:curl|https?|xh|wget)[ \t]|mysql|mariadb|redis-cli|sshpass|--pass(?:phrase|word)[ \t=]+[\x22']",
        pattern: concat!(
            // The command, then (lazily, across `\` line continuations) other arguments.
            r"(?:^|[^A-Za-z0-9_./:-])(?:curl|https?|xh|wget)[ \t](?:(?:[^\n]|\\\r?\n)*?[ \t])?",
            r#"(?:-u|--user|-U|--proxy-user|-a|--auth)(?:[ \t]+|=)["']?[^\s:"'$<{]*:["']?(?P<s>[^\s"'@]+)"#,
            // (Also named by its path: `/usr/bin/mysqldump`.)
            r"|(?:^|[^A-Za-z0-9_.-])(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)[ \t]",
            r#"(?:(?:[^\n]|\\\r?\n)*?[ \t])?-p(?P<m>[^\s'"-][^\s'"]*|'[^'\s]+'|"[^"\s]+")"#,
            r"|(?:^|[^A-Za-z0-9_./-])redis-cli[ \t](?:(?:[^\n]|\\\r?\n)*?[ \t])?-a[ \t]+",
            r#"(?P<r>[^\s'"-][^\s'"]*|'[^'\s]+'|"[^"\s]+")"#,
            r#"|(?:^|[^A-Za-z0-9_./-])sshpass[ \t]+-p[ \t]*(?P<p>[^\s'"-][^\s'"]*|'[^'\s]+'|"[^"\s]+")"#,
            // Any command's quoted `--passphrase "…"` or `--password '…'`, spaces and all.
            r#"|[ \t]--pass(?:phrase|word)(?:[ \t]+|=)(?P<q>"[^"\r\n$]+"|'[^'\r\n]+')"#,
        ),
        locate: cli_password,
    },
    Spec {
        kind: "registry_auth",
        description: "a Docker config.json \"auth\" or an .npmrc _auth value (base64 of user:password), or a Kubernetes .dockerconfigjson",
        prefilter: r#""auth"|_auth[ \t]*=|\.docker(?:configjson|cfg)"#,
        pattern: concat!(
            r#""auth"[ \t]*:[ \t]*"(?P<s>[A-Za-z0-9+/]{8,}={0,2})""#,
            // A Kubernetes pull secret's data: a whole Docker config file in base64.
            r#"|\.docker(?:configjson|cfg)["']?[ \t]*:[ \t]*["']?(?P<d>[A-Za-z0-9+/]{16,}={0,2})"#,
            r#"|(?m:^[ \t]*(?://[^\s=]*:)?_auth[ \t]*=[ \t]*"?(?P<t>[A-Za-z0-9+/]{8,}={0,2})"?[ \t]*\r?$)"#,
        ),
        locate: registry_auth,
    },
    Spec {
        kind: "registry_token",
        description: "a token under a host in Composer's auth.json (github-oauth, gitlab-token, gitlab-oauth, bearer)",
        prefilter: r#""(?:github-oauth|gitlab-token|gitlab-oauth|bearer)""#,
        pattern: concat!(
            r#""(?:github-oauth|gitlab-token|gitlab-oauth|bearer)"[ \t]*:[ \t]*\{\s*"#,
            r#""[^"\s]+"[ \t]*:[ \t]*"(?P<s>[^"\s]+)""#,
        ),
        locate: registry_token,
    },
    Spec {
        kind: "connection_string_password",
        description: "password in a scheme://user:PASSWORD@host connection string",
        prefilter: r"://",
        pattern: r#"(?i)[a-z][a-z0-9+.-]{1,30}://[^\s:/@'"?#\[\]]*:(?P<s>[^\s@/'"?#\[\]]+)@"#,
        locate: connection_password,
    },
    Spec {
        kind: "url_credential",
        description: "a token in a URL: as the whole user part, under a secret-named path segment, or a signature or key query parameter",
        prefilter: r"://",
        pattern: concat!(
            // Every branch starts with `://`, so the search skips to that literal; URL
            // characters are ASCII classes and repetitions unbounded, which keeps the automaton
            // small (this rule was once the slowest by far).
            r"://(?P<u>[A-Za-z0-9_-]{20,})@[A-Za-z0-9]",
            r"|://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%+=:@!$,;-]*)*/",
            r"(?i-u:api[_-]?key|apikey|access[_-]?token|token|secret|key|password|hook|webhook)s?/(?:v[0-9]{1,2}/)?",
            r#"(?P<p>[A-Za-z0-9_-]{16,})(?:[/?#\s"'<>)]|$)"#,
            r"|://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%+=:@!$,;-]*)*\?",
            // (A template's `{city}` or `${encodeURIComponent(q)}` may sit among the parameters,
            // and a marker where an earlier rule masked one: `X-Amz-Credential=[REDACTED:…]`.)
            r"(?:[A-Za-z0-9._~%+=:@!$,;/{}()\[\]-]*&)*",
            // (`api_key=`, `access_token=` and other secret names are `password_assignment`'s.)
            // (InfluxDB's `u=…&p=…` and `pass=` carry a password.)
            r"(?i-u:x-amz-signature|x-goog-signature|signature|sig|hmac|key|appid|app_id|p|pass)=(?P<q>[A-Za-z0-9%_.-]{16,})",
        ),
        locate: url_credential,
    },
    Spec {
        kind: "netrc_password",
        description: "the password of a .netrc / .authinfo entry (machine HOST login USER password PASS)",
        prefilter: r"password",
        pattern: concat!(
            r"(?:^|\s)(?:machine[ \t]+\S+|default)\s+(?:(?:account|port)[ \t]+\S+\s+)*",
            r"login[ \t]+\S+\s+(?:(?:account|port)[ \t]+\S+\s+)*password[ \t]+(?P<s>\S+)",
        ),
        locate: netrc,
    },
    Spec {
        kind: "pgpass_password",
        description: "the password field of a PostgreSQL .pgpass line (host:port:database:user:password), also echoed into one",
        // From the port on (a port between colons alone is in every time of day, so four
        // fields): a prefilter from each line's start keeps a thread of the one pass alive
        // through every line's first word.
        prefilter: r":(?:[0-9]{1,5}|\*):[^\s:]+:[^\s:]+:[^\s:]",
        pattern: concat!(
            // Also echoed into the file: `echo "host:5432:db:user:…" >> ~/.pgpass`.
            r#"(?m)^[ \t]*(?:echo[ \t]+["']?)?(?P<h>[A-Za-z0-9_.*-]+|\[[0-9A-Fa-f:.]+\]):(?:[0-9]{1,5}|\*):"#,
            r"(?:[^:\s\\]|\\.)+:(?P<u>(?:[^:\s\\]|\\.)+):(?P<s>(?:[^:\s\\]|\\.)+)",
            r#"(?:["'][ \t]*>>?[ \t]*[^\s]*\.pgpass)?[ \t]*\r?$"#,
        ),
        locate: pgpass,
    },
    Spec {
        kind: "pgpass_password",
        description: "the password of a PgBouncer userlist.txt line (\"user\" \"password\"; not an md5 or SCRAM verifier), in a text made of such lines",
        // Anchored at the text's start: a userlist holds nothing else (but comments).
        prefilter: r#"\A(?:[ \t]*(?:;[^\r\n]*)?\r?\n)*[ \t]*"[^"\r\n]+"[ \t]+""#,
        pattern: r#"(?m)^[ \t]*"(?P<u>[^"\r\n]{1,64})"[ \t]+"(?P<s>[^"\r\n]{6,})"[ \t]*\r?$"#,
        locate: userlist,
    },
    Spec {
        kind: "xml_secret",
        description: "text of a secret-named XML element, an appSettings <add key=... value=...>, or a Hadoop-style <name>/<value> pair",
        prefilter: secret_word_prefilter!(),
        pattern: concat!(
            r"<(?P<t>[A-Za-z0-9_.:-]*?(?i-u:",
            secret_word!(),
            r")(?i-u:[_.-]?(?:key|value))?)(?:[ \t][^<>]*)?>(?P<s>[^<>\s]+)</(?P<c>[^<>\s]+)>",
            r#"|<add[ \t]+key="(?P<ak>[^"]*)"[ \t]+value="(?P<av>[^"\s]+)""#,
            // (Jenkins parameters: `<name>…</name>`, a description, `<defaultValue>…`.)
            r"|<name>[ \t]*(?P<hn>[^<>\s]+)[ \t]*</name>\s*(?:<description>[^<>]*</description>\s*)?",
            r"<(?P<ho>value|defaultValue)>(?P<hv>[^<>\s]+)</(?P<hc>value|defaultValue)>",
            // A Windows answer file's `<AdministratorPassword><Value>…</Value>`.
            r"|<(?P<wt>[A-Za-z0-9_.:-]*?(?i-u:",
            secret_word!(),
            r"))>\s*<Value>(?P<wv>[^<>\s]+)</Value>",
        ),
        locate: xml_secret,
    },
    Spec {
        kind: "xml_secret",
        description: "the value of an XML element whose name or key attribute is secret-named, or key-named when the value looks random",
        // The attribute and its secret word, as the name must hold one: a secret word alone
        // would run this rule over every text that mentions a key beside a generic type. Or a
        // key-named attribute right before a value (.NET's `<add key="…Key" value="…"/>`).
        prefilter: concat!(
            r#"(?i-u:name|key)[ \t]*=[ \t]*"[^"<>]*(?i-u:"#,
            secret_word!(),
            r#"|key"[ \t]+value[ \t]*=)"#
        ),
        pattern: concat!(
            // `<property name="db.password" value="…"/>`, `<property name="…">…</property>`,
            // `<entry key="smtp.password">…</entry>`: the name is an attribute.
            r#"<[A-Za-z][A-Za-z0-9_.:-]*[ \t](?:[^<>]*?[ \t])?(?i-u:name|key)[ \t]*=[ \t]*"(?P<pn>[^"<>]*)""#,
            r#"(?:(?:[ \t][^<>]*?)?[ \t](?i-u:value)[ \t]*=[ \t]*"(?P<pv>[^"\s]+)"|[^<>]*?>(?P<pt>[^<>\s]+)</"#,
            // .NET `<setting name="SmtpPassword" …><value>…</value></setting>`.
            r#"|[^<>]*?>\s*<value>(?P<pw>[^<>\s]+)</value>)"#,
        ),
        locate: xml_secret,
    },
    Spec {
        kind: "yaml_block_secret",
        description: "a YAML block scalar (| or >) under a secret-named key",
        // The key and the block indicator: most text with a secret word has no block scalar.
        prefilter: concat!(
            r"(?i-u)",
            secret_word!(),
            r#"(?:[_.-]?(?:key|value))?["']?[ \t]*:[ \t]*[|>]"#,
        ),
        pattern: concat!(
            r#"(?m)^(?P<i>[ \t]*(?:-[ \t]+)?)["']?(?P<k>[A-Za-z0-9_.-]*?(?i-u:"#,
            secret_word!(),
            r#")(?i-u:[_.-]?(?:key|value))?)["']?[ \t]*:[ \t]*[|>][-+0-9]{0,2}[ \t]*(?:#[^\r\n]*)?\r?$"#,
        ),
        locate: yaml_block,
    },
    Spec {
        kind: "dockerfile_secret",
        description: "the value of a Dockerfile ENV or ARG in its space-separated form under a secret-named key",
        prefilter: r"(?:ENV|ARG)[ \t]",
        pattern: concat!(
            r"(?m)^[ \t]*(?:ENV|ARG)[ \t]+(?P<k>[A-Za-z0-9_.-]*?(?i-u:",
            secret_word!(),
            r#")(?i-u:[_.-]?(?:key|value))?)[ \t]+(?P<s>"[^"\r\n]*"|'[^'\r\n]*'|[^\s"'=][^\s]*)"#,
        ),
        locate: dockerfile,
    },
    Spec {
        kind: "code_credential",
        description: "a password passed as a string literal: define('DB_PASSWORD', '...'), a lookup's or os.environ.setdefault's default or fallback (process.env.JWT_SECRET ?? \"...\"), new NetworkCredential(user, \"...\"), PasswordAuthentication, HTTPBasicAuth, SetBasicAuth, getConnection(url, user, \"...\")",
        prefilter: r"define[ \t]*\(|env[ \t]*\(|environ\.(?:get|setdefault)|ENV\.fetch|Credential|PasswordAuthentication|BasicAuth|DigestAuth|PlainAuth|(?i-u:basic_?auth)|(?:l|L)ogin[ \t]*\(|auth[ \t]*=?[ \t]*\(|getConnection|process\.env\.[A-Za-z0-9_]+[ \t]*(?:\?\?|\|\|)",
        pattern: concat!(
            // `define('DB_PASSWORD', '…')`: the constant's name says what the value is; so
            // does the variable's in a lookup's default (`env('DB_PASSWORD', '…')`,
            // `os.getenv("DB_PASSWORD", "…")`, `ENV.fetch("DB_PASSWORD", "…")`, and
            // `os.environ.setdefault("API_TOKEN", "…")`, a default set for what follows).
            r#"(?-u:\b)(?:define|env|getenv|environ\.get|environ\.setdefault|ENV\.fetch)[ \t]*\([ \t]*["'](?P<k>[A-Za-z0-9_]+)["'][ \t]*,[ \t]*["'](?P<dv>[^"'\\\r\n]*)["'][ \t]*\)"#,
            // A lookup's fallback: `process.env.JWT_SECRET ?? "…"` (or `||`), Python's
            // `os.getenv("DB_PASSWORD") or "…"`.
            r#"|process\.env\.(?P<fk>[A-Za-z0-9_]+)[ \t]*(?:\?\?|\|\|)[ \t]*["'`](?P<fv>[^"'`\\\r\n]*)["'`]"#,
            r#"|(?-u:\b)(?:getenv|environ\.get)[ \t]*\([ \t]*["'](?P<ok>[A-Za-z0-9_]+)["'][ \t]*\)[ \t]+or[ \t]+["'](?P<ov>[^"'\\\r\n]*)["']"#,
            // Calls whose second argument is the password (the user comes first).
            r"|(?-u:\b)(?:NetworkCredential|PasswordAuthentication|UsernamePasswordCredentials",
            r"|UsernamePasswordAuthenticationToken|PasswordCredential|HTTPBasicAuth|HTTPDigestAuth",
            r"|HttpBasicAuth|BasicAuth|DigestAuth|SetBasicAuth|basicAuth|basic_auth|login|Login|auth",
            // OkHttp's `Credentials.basic(user, "…")`.
            r"|Credentials\.basic",
            // `requests.get(url, auth=("user", "…"))`
            r"|auth[ \t]*=)[ \t]*\(\s*",
            // The password may be wrapped as reqwest's `.basic_auth(user, Some("…"))` wraps it.
            r#"(?:"[^"\r\n]*"(?:\.(?:to_owned|to_string|into)\(\))?|'[^'\r\n]*'|[A-Za-z_$][A-Za-z0-9_.$]*)"#,
            r#"\s*,\s*(?:Some\([ \t]*)?[rbu]?["'](?P<cv>[^"'\\\s]*)["']"#,
            // Go's `smtp.PlainAuth(identity, user, password, host)`.
            r#"|PlainAuth[ \t]*\([ \t]*"[^"\r\n]*"[ \t]*,[ \t]*(?:"[^"\r\n]*"|[A-Za-z_][A-Za-z0-9_.]*)[ \t]*,[ \t]*"(?P<gv>[^"\\\s]*)""#,
            // JDBC's `getConnection(url, user, password)`.
            r#"|getConnection[ \t]*\(\s*(?:"[^"\r\n]*"|[A-Za-z_][A-Za-z0-9_.]*)\s*,\s*"#,
            r#"(?:"[^"\r\n]*"|[A-Za-z_][A-Za-z0-9_.]*)\s*,\s*"(?P<jv>[^"\\\s]*)""#,
        ),
        locate: code_credential,
    },
    Spec {
        kind: "code_credential",
        description: "a password literal in a builder's .credentials(user, \"...\"), Rust's Credentials::new, PHP's new PDO($dsn, $user, \"...\"), SQL's IDENTIFIED BY '...' and CREATE ROLE ... PASSWORD '...', a JWT library's jwt.sign(payload, \"...\") or PowerShell's ConvertTo-SecureString \"...\" -AsPlainText",
        // Kept apart from the calls above, so that each prefilter hit runs a small pattern.
        prefilter: r"\.credentials[ \t]*\(|Credentials::new|PDO[ \t]*\(|mysqli(?:_connect)?[ \t]*\(|(?i-u:identified[ \t]+by[ \t]|password[ \t]+')|(?i-u:jwt)\.(?:sign|verify|encode|decode)|ConvertTo-SecureString",
        pattern: concat!(
            r#"(?:\.credentials|Credentials::new)[ \t]*\(\s*"#,
            r#"(?:"[^"\r\n]*"(?:\.(?:to_owned|to_string|into)\(\))?|'[^'\r\n]*'|[A-Za-z_$][A-Za-z0-9_.$]*)"#,
            r#"\s*,\s*[rbu]?["'](?P<cv>[^"'\\\s]*)["']"#,
            // The third of PHP's `new PDO($dsn, $user, $password)` and `mysqli_connect($host,
            // $user, $password)`.
            r#"|(?:PDO|mysqli_connect|mysqli)[ \t]*\(\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|\$?[A-Za-z_][A-Za-z0-9_.]*)\s*,\s*"#,
            r#"(?:"[^"\r\n]*"|'[^'\r\n]*'|\$?[A-Za-z_][A-Za-z0-9_.]*)\s*,\s*["'](?P<jv>[^"'\\\s]*)["']"#,
            // SQL: `CREATE USER … IDENTIFIED BY '…'`, `… WITH LOGIN PASSWORD '…'`.
            r#"|(?i-u:identified)[ \t]+(?i-u:by)[ \t]+(?:(?i-u:password)[ \t]+)?'(?P<sv>[^'\\\r\n]+)'"#,
            r#"|(?-u:\b)(?i-u:with)[ \t]+(?:[A-Za-z]+[ \t]+){0,4}?(?i-u:password)[ \t]+'(?P<sw>[^'\\\r\n]+)'"#,
            // `CREATE ROLE reporting LOGIN PASSWORD '…'`, `ALTER USER app PASSWORD '…'`.
            r#"|(?-u:\b)(?i-u:create|alter)[ \t]+(?i-u:role|user)[ \t]+[^;'\r\n]*?(?-u:\b)(?i-u:password)[ \t]+'(?P<sr>[^'\\\r\n]+)'"#,
            // A JWT library's signing secret: `jwt.sign(payload, "…")`, `jwt.encode(payload, "…")`.
            r#"|(?i-u:jwt)\.(?:sign|verify|encode|decode)[ \t]*\(\s*(?:\{[^{}]*\}|[A-Za-z_$][A-Za-z0-9_.$]*)"#,
            r#"\s*,\s*["'](?P<wv>[^"'\\\s]+)["']"#,
            // PowerShell's `ConvertTo-SecureString "…" -AsPlainText`: the text is the password.
            r#"|ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?["'](?P<pv>[^"'\r\n]+)["'][ \t]+-AsPlainText"#,
        ),
        locate: code_credential,
    },
    Spec {
        kind: "code_credential",
        description: "a string macro with a secret-named name in C or C++ (#define MQTT_PASSWORD \"...\")",
        // The secret word in the macro's name: every C header has `#define`.
        prefilter: r"\#[ \t]*define[ \t]+[A-Za-z0-9_]*(?i-u:pass|pwd|psk|secret|token|authtok|key)",
        pattern: r#"\#[ \t]*define[ \t]+(?P<k>[A-Za-z0-9_]+)[ \t]+"(?P<dv>[^"\\\r\n]*)""#,
        locate: c_define,
    },
    Spec {
        kind: "code_credential",
        description: "a password literal given to a setter or builder method (setPassword(\"...\"), withPassword(\"...\"), .password(\"...\"))",
        // From the secret word on: an unanchored `set`/`with`/`.` prefix would start a
        // thread of the prefilter's automaton at every method call.
        prefilter: r"(?i-u)(?:pass|pwd|secret|token|api_?key|access_?key)[A-Za-z0-9]*[ \t]*\(\s*[\x22']",
        pattern: concat!(
            // The method's name holds a secret word; the search starts from that literal.
            r#"(?P<dot>\.)?(?-u:\b)(?P<m>(?:[A-Za-z][A-Za-z0-9]*?)?"#,
            r#"(?i-u:pass|pwd|secret|token|api_?key|access_?key)[A-Za-z0-9]*)[ \t]*\(\s*"#,
            r#"["'](?P<v>[^"'\\\s]*)["']\s*\)"#,
        ),
        locate: setter_credential,
    },
    Spec {
        kind: "high_entropy_key",
        description: "a random-looking value defined as a key or salt constant (WordPress define('AUTH_KEY', '...'))",
        prefilter: r"define[ \t]*\(",
        pattern: concat!(
            r#"define[ \t]*\([ \t]*["'](?P<k>[A-Za-z0-9_]*?(?i-u:key|salt))["'][ \t]*,[ \t]*"#,
            r#"["'](?P<v>[^"'\\\r\n]{20,})["'][ \t]*\)"#,
        ),
        locate: defined_key,
    },
    Spec {
        kind: "password_assignment",
        description: "value assigned to a password, secret, token, api_key or access_key name",
        prefilter: concat!(
            r"(?i-u)",
            secret_word!(),
            r#"(?:[_.-]?(?:key|value))?(?:\\?["']\]?|\]|\[[0-9A-Z_]{0,8}\])?[ \t]*[=:]"#,
        ),
        pattern: concat!(
            r"(?P<k>[A-Za-z0-9_.-]*?(?i-u:",
            secret_word!(),
            r")(?i-u:[_.-]?(?:key|value))?)",
            // A typed declaration (`password: str = "…"`, `static TOKEN: &str = "…"`) comes
            // first: with a plain `:` the type would be read as the value.
            // (C's `char api_token[] = "…"` sizes an array after the name.)
            r#"(?:\\?["']\]?|\]|\[[0-9A-Z_]{0,8}\])?(?P<sep>[ \t]*:[ \t]*(?P<ty>(?:&(?:'static[ \t]+)?)?[A-Za-z_][A-Za-z0-9_.]*(?:\[[A-Za-z0-9_., \[\]]*\])?\??)[ \t]*=[ \t]*"#,
            r"|[ \t]*(?:=>|:=|==|::|=|:)[ \t]*)",
            // (Go's `[]byte("…")` wraps the literal.)
            // (A YAML anchor, `&dbpass`, may name the value first.)
            // (Triple quotes, as Grafana's INI files quote a value holding `#` or `;`.)
            r#"(?:&[A-Za-z0-9_-]+[ \t]+)?(?:"""(?P<tq>[^"\r\n]+)"""|(?:\[\]byte\()?[rbfuRBFU]{0,2}\\?["'`](?P<qv>[^"'`\s\\]*)\\?["'`]"#,
            r#"|(?P<bv>[^\s"'`,;&=:|*!#@(\[{<][^\s"'`,;&]*))"#,
        ),
        locate: assignment,
    },
    Spec {
        kind: "password_assignment",
        description: "the value of a name/value pair with a secret-named name (Kubernetes and ECS env entries, Postman variables), or a key-named one when it looks random",
        // The secret-named name, its separator and the `value` key that follows it.
        prefilter: concat!(
            r#"(?i-u)(?:pass|pwd|psk|secret|token|authtok|key)[A-Za-z0-9_.-]*["']?[ \t]*(?:,[ \t]*\r?\n?|\r?\n)"#,
            r#"[ \t]*["']?value["']?[ \t]*[:=]"#,
        ),
        pattern: concat!(
            r#"["']?(?i-u:name|key)["']?[ \t]*[:=][ \t]*["']?(?P<k>[A-Za-z0-9_.-]+)["']?[ \t]*"#,
            // The value on the same line (`{"name": …, "value": …}`) or the next (YAML, and
            // JSON written a member a line: a Postman environment's `"key": …,` / `"value": …`).
            r#"(?:,[ \t]*(?:\r?\n[ \t]*)?|\r?\n[ \t]*)["']?(?i-u:value)["']?[ \t]*[:=][ \t]*"#,
            r#"(?:"(?P<qv>[^"\r\n]*)"|'(?P<sv>[^'\r\n]*)'|(?P<bv>[^\s"'#,}][^\s,}]*))"#,
        ),
        locate: name_value,
    },
    Spec {
        kind: "password_assignment",
        description: "the value of a name/value pair written value first (- value: … / name: DB_PASSWORD), as the name/value rule above reads it",
        // A list item or an object that opens with its `value` (`- value:`, `{value:`): the
        // word alone, or its line up to the name, would run through every line of code that
        // assigns a value.
        prefilter: r#"(?:-[ \t]+|\{[ \t]*)["']?(?i-u:value)["']?[ \t]*[:=]"#,
        pattern: concat!(
            r#"(?:-[ \t]+|\{[ \t]*)["']?(?i-u:value)["']?[ \t]*[:=][ \t]*"#,
            r#"(?:"(?P<qv>[^"\r\n]*)"|'(?P<sv>[^'\r\n]*)'|(?P<bv>[^\s"'#,}][^\s,}]*))"#,
            r#"[ \t]*(?:,[ \t]*(?:\r?\n[ \t]*)?|\r?\n[ \t]*)["']?(?i-u:name|key)["']?[ \t]*[:=][ \t]*"#,
            r#"["']?(?P<k>[A-Za-z0-9_.-]+)["']?"#,
        ),
        locate: name_value,
    },
    Spec {
        kind: "password_assignment",
        description: "a passphrase with spaces assigned to a password or secret name in an env, properties or YAML file",
        // A quote, or an unquoted value with a space, after the separator.
        prefilter: r#"(?i-u:pass|pwd|psk|secret)[A-Za-z0-9_.-]*(?:[ \t]*=[ \t]*["']|[ \t]*=[ \t]*[^\s"'#=][^\r\n#"'=]* |[ \t]*:[ \t]+["'])"#,
        pattern: concat!(
            r"(?m)^[ \t]*(?:export[ \t]+|-[ \t]+)?(?P<k>[A-Za-z][A-Za-z0-9_.-]*)(?P<sep>[ \t]*=[ \t]*|[ \t]*:[ \t]+)",
            r#"(?:"(?P<qv>[^"\r\n\\]* [^"\r\n\\]*)"|'(?P<sv>[^'\r\n\\]* [^'\r\n\\]*)'"#,
            // Unquoted after `=`, as `.properties` and dotenv files allow.
            r#"|(?P<uv>[^\s"'#=][^\r\n#"'=]* [^\r\n#"'=]*[^\s#"'=]))"#,
            r"[ \t]*(?:#[^\r\n]*)?\r?$",
        ),
        locate: passphrase,
    },
    Spec {
        kind: "connection_string_password",
        description: "password in a key=value; connection string (ADO.NET, ODBC: ;Password=...;, Pwd={...}) or a Go user:PASSWORD@tcp(host) DSN",
        prefilter: r"(?i-u);[ \t]*(?:password|pwd)[ \t]*=|@(?:tcp|unix|udp)\(|(?i-u)(?:password|pwd)[ \t]*=[ \t]*[{#!]",
        pattern: concat!(
            // After another `key=value;`: the value runs to the next `;` or the string's end. (A
            // value `password_assignment` takes, one not starting with `!`, `#`, `@` …, is
            // masked by it first.)
            r#"(?i-u:;[ \t]*(?:password|pwd)[ \t]*=)[ \t]*(?P<a>[^;"'\s][^;"'\r\n]*?)[ \t]*(?:;|["']|\r?\n|$)"#,
            r#"|(?:^|[\s"'`=])[A-Za-z0-9_.-]+:(?P<t>[^\s"'`@/:]+)@(?:tcp|unix|udp)\("#,
            // A connection string cut into literals (`"UID=etl;"` `"PWD={…};"`): braced as ODBC
            // braces a value with `;` in it, or starting with a character no assignment takes.
            r#"|(?:^|[;\s"'])(?i-u:password|pwd)[ \t]*=[ \t]*(?:\{(?P<b>[^{}\r\n]+)\}|(?P<c>[#!][^;"'\s]*))"#,
        ),
        locate: connection_password,
    },
    Spec {
        kind: "password_assignment",
        description: "the default of a Terraform variable with a secret-named name",
        prefilter: concat!(r#"variable[ \t]+"[^"\r\n]*(?i-u:"#, secret_word!(), ")"),
        pattern: concat!(
            r#"variable[ \t]+"(?P<k>[^"\r\n]*(?i-u:"#,
            secret_word!(),
            r#")[^"\r\n]*)"[ \t]*\{[^{}]*?(?m:^)[ \t]*default[ \t]*=[ \t]*"(?P<qv>[^"\r\n]*)""#,
        ),
        locate: variable_default,
    },
    Spec {
        kind: "high_entropy_key",
        description: "a random-looking value assigned to a key, salt, encryption or credentials name (cred, creds; secret_key_base, APP_KEY=base64:..., FERNET_KEY, signing keys, Consul's encrypt), also as hex or base64 given to a decoder (keyHex = \"…\", KEY = Base64.getDecoder().decode(\"…\"), KEY: [u8; 32] = hex!(\"…\"), hex2bin('…'))",
        prefilter: concat!(
            r"(?i-u)(?:key(?:[_.-]?base|s)?|salt|pepper|hmac|cred(?:entials?|s)?|auth|encrypt|kek|dek)",
            r#"(?:[_.-]?(?:hex|b64|base64|bytes))?(?:\\?["']\]?|\[[0-9A-Z_]{0,8}\])?(?:,|[ \t]*[=:])"#,
        ),
        pattern: concat!(
            r"(?P<k>[A-Za-z0-9_.-]*?(?P<w>(?i-u:key[_.-]?base|keys|key|salt|pepper|hmac|credentials?|creds?|auth|encrypt|kek|dek))",
            // A key's encoding may follow its name (`keyHex`, `KEY_B64`, `aes_key_bytes`).
            r"(?i-u:[_.-]?(?:hex|b64|base64|bytes))?)",
            // Go's `signingKey, _ = hex.DecodeString(…)` drops the decoder's error.
            // Rust's `KEY: &[u8] = b"…"`, `[u8; 32]` and `KEY_HEX: &str` name the type first.
            // Zig's `[]const u8` too.
            r#"(?:\\?["']\]?|\[[0-9A-Z_]{0,8}\])?(?:,[ \t]*_|:[ \t]*&?(?:'static[ \t]+)?(?:\[u8(?:;[ \t]*[0-9]+)?\]|str|\[\]const[ \t]+u8))?(?P<sep>[ \t]*(?:=>|:=|=|:)[ \t]*)"#,
            // Random-looking values are 20 characters or longer; shorter ones never match. The
            // literal may be given to Go's `[]byte(…)` or to a decoder first
            // (`Base64.getDecoder().decode(…)`, `hex.DecodeString(…)`, `bytes.fromhex(…)`,
            // `base64.b64decode(…)`, `Convert.FromBase64String(…)`, `HexFormat.of().parseHex(…)`,
            // Rust's `hex!(…)`, PHP's `hex2bin(…)`).
            r#"(?:(?:\[\]byte\(|(?:[A-Za-z_][A-Za-z0-9_]*(?:\(\))?\.){0,3}(?i-u:[a-z0-9_]*decode[a-z0-9_]*|fromhex|from_hex|unhexlify|frombase64string|parsehex(?:binary)?|unhex|hex2bin|hex!)\([ \t]*)?"#,
            r#"[rbfuRBFU]{0,2}\\?["'`](?P<qv>[^"'`\s\\]{20,})\\?["'`]|(?P<bv>[A-Za-z0-9+/=_:.-]{20,})"#,
            // (A random printable key, as Django's generator writes them: `e2161uYe+#^X3v…`.)
            r#"|(?P<rv>[^\s"'`]{32,}))"#,
        ),
        locate: high_entropy_key,
    },
    Spec {
        kind: "high_entropy_key",
        description: "a random-looking key given to a key constructor (SecretKeySpec, SymmetricSecurityKey, SymmetricKey, Dart's Key.fromBase64), directly or through a decoder",
        prefilter: r"SecretKeySpec\(|SymmetricSecurityKey\(|SymmetricKey\(|Key\.from(?:Base64|Base16|Utf8)\(",
        pattern: concat!(
            // (Dart's `encrypt` package: `Key.fromBase64("…")`.)
            r"(?:SecretKeySpec|SymmetricSecurityKey|SymmetricKey|Key\.from(?:Base64|Base16|Utf8))\(\s*(?:data:[ \t]*)?",
            r"(?:(?:[A-Za-z_][A-Za-z0-9_]*(?:\(\))?\.){0,3}(?i-u:[a-z0-9_]*decode[a-z0-9_]*|fromhex|from_hex|frombase64string|parsehex)\([ \t]*",
            r"|Data\(base64Encoded:[ \t]*)?",
            r#"["'](?P<s>[^"'\s\\]{20,})["']"#,
        ),
        locate: constructor_key,
    },
    vendor(
        "high_entropy_key",
        "a Fernet key (32 bytes in URL-safe base64) given to Fernet()",
        r"Fernet\(",
        r#"Fernet\(\s*b?["'](?P<s>[A-Za-z0-9_-]{43}=)["']"#,
    ),
    Spec {
        kind: "password_assignment",
        description: "a Gradle or Groovy setting given as a call without parentheses (storePassword '...')",
        prefilter: r#"(?i-u)(?:pass|pwd|secret|token|psk)[A-Za-z0-9_]*[ \t]+["']"#,
        pattern: concat!(
            r"(?m)^[ \t]*(?P<k>[A-Za-z][A-Za-z0-9_]*?(?i-u:pass|pwd|secret|token|psk)[A-Za-z0-9_]*)",
            r#"[ \t]+(?P<s>"[^"\s\\]+"|'[^'\s\\]+')[ \t]*;?[ \t]*\r?$"#,
        ),
        locate: dsl_setting,
    },
    Spec {
        kind: "password_assignment",
        description: "a server's password directive (Redis requirepass and masterauth, and an ACL user's >password)",
        prefilter: r"requirepass|masterauth|(?i-u)user[ \t]+[!-~]+[ \t]+on[ \t]",
        pattern: concat!(
            r##"(?m)^[ \t]*(?:requirepass|masterauth)[ \t]+(?P<s>"[^"\r\n]+"|[^\s"#]+)"##,
            // Redis ACLs: `user NAME on … >password` in an ACL file, `ACL SETUSER NAME on >…`.
            r"|(?:(?m:^)[ \t]*|(?i-u:acl)[ \t]+(?i-u:set))(?i-u:user)[ \t]+[!-~]+[ \t]+(?i-u:on)[ \t]",
            r"(?:[^\r\n>]*?[ \t])?>(?P<r>[^\s>]+)",
        ),
        locate: directive,
    },
    Spec {
        kind: "password_assignment",
        description: "a password in a server's own configuration: OpenLDAP's rootpw (not a {SCHEME} hash), a Nagios $USERn$ macro (not a path), an AsciiDoc labelled password:: entry",
        prefilter: r"rootpw[ \t]|\$USER[0-9]{1,3}\$=|(?i-u)pass(?:word|phrase)?::[ \t]",
        pattern: concat!(
            r"(?m)(?:^[ \t]*rootpw[ \t]+|^\$USER[0-9]{1,3}\$=|^[ \t]*(?i-u:pass(?:word|phrase)?)::[ \t]+)",
            r##"(?P<s>"[^"\r\n{]+"|[^\s"{#/$][^\s"]*)"##,
        ),
        locate: directive,
    },
    Spec {
        kind: "password_assignment",
        description: "a Dovecot passwd-file's clear-text password (user:{PLAIN}...:uid:gid:...)",
        prefilter: r"\{(?:PLAIN|CLEAR|CLEARTEXT)\}",
        pattern: r"(?m)^[^:\s]+:\{(?:PLAIN|CLEAR|CLEARTEXT)\}(?P<s>[^:\s]+)",
        locate: directive,
    },
    Spec {
        kind: "connection_string_password",
        description: "the password of a Bundler gem-server credential (BUNDLE_HOST__NAME: user:PASSWORD)",
        prefilter: r"BUNDLE_[A-Z0-9_-]*__",
        pattern: r#"BUNDLE_(?:[A-Z0-9-]+__)+[A-Z0-9-]+["']?[ \t]*[:=][ \t]*["']?[A-Za-z0-9_.%+@][A-Za-z0-9_.%+@-]*:(?P<b>[^\s"'\\]+)"#,
        locate: connection_password,
    },
    Spec {
        kind: "code_credential",
        description: "a password as a positional argument of a connection call (Perl's DBI->connect, C's mysql_real_connect, Sequelize, Ruby's Net::SMTP.start), curl's CURLOPT_USERPWD and CURLOPT_PASSWORD, or a URL template's user:password arguments (Sprintf(\"…://%s:%s@…\", user, \"…\"), \"…://{}:{}@…\".format(user, \"…\"))",
        prefilter: r"DBI->connect|mysql_real_connect|Sequelize[ \t]*\(|SMTP\.start|CURLOPT_(?:USERPWD|(?:PROXY|TLSAUTH_)?PASSWORD|KEYPASSWD)|://%s:%s@|://\{\}:\{\}@",
        pattern: concat!(
            // The arguments before the password: strings, names, variables, symbols, numbers.
            r#"(?:DBI->connect[ \t]*\((?:\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[$@:]?[A-Za-z_][A-Za-z0-9_.:]*|[0-9]+)\s*,){2}"#,
            r#"|mysql_real_connect[ \t]*\((?:\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[&*]?[A-Za-z_][A-Za-z0-9_.>-]*|[0-9]+)\s*,){3}"#,
            r#"|Sequelize[ \t]*\((?:\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|`[^`\r\n]*`|[A-Za-z_$][A-Za-z0-9_.$]*)\s*,){2}"#,
            r#"|SMTP\.start[ \t]*\((?:\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|:?[A-Za-z_][A-Za-z0-9_.:\[\]']*|[0-9]+)\s*,){4}"#,
            r#"|://%s:%s@[^"\r\n]*"\s*,\s*(?:"[^"\r\n]*"|[A-Za-z_][A-Za-z0-9_.]*)\s*,"#,
            r#"|://\{\}:\{\}@[^"'\r\n]*["']\.format\(\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[A-Za-z_][A-Za-z0-9_.]*)\s*,)"#,
            r#"\s*["'](?P<pa>[^"'\\\s,)]*)["']"#,
            // `curl_easy_setopt(curl, CURLOPT_USERPWD, "user:…")`: what follows the user's colon.
            // `CURLOPT_PASSWORD, "…"` (and the proxy's, TLS-SRP's and a client key's): all of it.
            r#"|CURLOPT_(?:USERPWD\s*,\s*["'][^"':\r\n]*:|(?:(?:PROXY|TLSAUTH_)?PASSWORD|KEYPASSWD)\s*,\s*["'])"#,
            r#"(?P<pb>[^"'\\\s]*)["']"#,
        ),
        locate: code_credential,
    },
    Spec {
        kind: "code_credential",
        description: "a password as a positional argument of a client library's call that takes one there: paramiko's connect(host, port, user, \"…\"), ldap3's Connection(server, user, \"…\"), pika's PlainCredentials(user, \"…\"), ftplib's FTP(host, user, \"…\") and FTP_TLS, Go's ssh.Password(\"…\"), Arduino's WiFi.begin(ssid, \"…\")",
        prefilter: r"\.connect[ \t]*\(|Connection[ \t]*\(|PlainCredentials[ \t]*\(|FTP(?:_TLS)?[ \t]*\(|ssh\.Password[ \t]*\(|WiFi\.(?:begin|softAP)[ \t]*\(",
        pattern: concat!(
            // The arguments before the password: strings, names (a call's result among them),
            // numbers; paramiko's port is a number, ldap3's first argument its server.
            r#"(?:\.connect[ \t]*\(\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[A-Za-z_][A-Za-z0-9_.]*)\s*,\s*[0-9]{1,5}\s*,\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[A-Za-z_][A-Za-z0-9_.]*)\s*,"#,
            r#"|\bConnection[ \t]*\(\s*(?:Server\([^()\r\n]*\)|[A-Za-z_]*(?:server|srv)[A-Za-z0-9_]*)\s*,\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[A-Za-z_][A-Za-z0-9_.]*)\s*,"#,
            r#"|\bPlainCredentials[ \t]*\(\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[A-Za-z_][A-Za-z0-9_.]*)\s*,"#,
            r#"|\bFTP(?:_TLS)?[ \t]*\((?:\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[A-Za-z_][A-Za-z0-9_.]*)\s*,){2}"#,
            r#"|\bssh\.Password[ \t]*\("#,
            r#"|\bWiFi\.(?:begin|softAP)[ \t]*\(\s*(?:"[^"\r\n]*"|[A-Za-z_][A-Za-z0-9_.]*)\s*,)"#,
            r#"\s*["'](?P<pa>[^"'\\\s,)]*)["']"#,
        ),
        locate: code_credential,
    },
    Spec {
        kind: "high_entropy_key",
        description: "a key written as 16 or more random-looking bytes under a key-named name: an array of byte literals (static const uint8_t ota_key[16] = { 0xf3, ... }, const DEK: [u8; 16] = [0x26, ...], new byte[] { 0x58, (byte) 0xFE, ... }) or a bytes literal of escapes (_KEY = b\"\\x77\\x6b...\")",
        // A key word right before the array's size, type or `=`, and the first byte: byte
        // tables are common in code, key-named ones rare (keyed on the bytes alone, masking
        // took a twentieth longer).
        prefilter: concat!(
            r"(?i-u:key|secret|salt|dek|kek|hmac|pepper)(?:\[[0-9A-Za-z_ ]{0,16}\])?[ \t]*(?::[ \t]*&?\[u8;[ \t]*[0-9A-Za-z_]+\])?",
            r"[ \t]*=[ \t]*(?:new[ \t]+byte[ \t]*\[[ \t]*\][ \t]*)?(?:[\[{][ \t\r\n]*(?:\(byte\)[ \t]*)?0x|b[\x22']\\x)",
        ),
        pattern: concat!(
            // The name, a C array's size or a Rust type, then the bytes: a list in braces or
            // brackets (Java's and C#'s `new byte[]` before it), or a Python bytes literal.
            r"(?P<k>[A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:\[[0-9A-Za-z_ ]{0,16}\])?[ \t]*(?::[ \t]*&?\[u8;[ \t]*[0-9A-Za-z_]+\])?[ \t]*=[ \t]*",
            r"(?:(?:new[ \t]+byte[ \t]*\[[ \t]*\][ \t]*)?[\[{]\s*",
            r"(?P<v>(?:(?:\(byte\)[ \t]*)?0x[0-9A-Fa-f]{2}\s*,\s*){15,}(?:\(byte\)[ \t]*)?0x[0-9A-Fa-f]{2})",
            r#"|b["'](?P<w>(?:\\x[0-9A-Fa-f]{2}){16,})["'])"#,
        ),
        locate: byte_key,
    },
    Spec {
        kind: "high_entropy_key",
        description: "a random-looking key given to an HMAC (OpenSSL::HMAC.hexdigest(alg, \"…\", data), createHmac(alg, \"…\"), hmac.new(b\"…\"), Go's hmac.New(h, []byte(\"…\")))",
        prefilter: r"HMAC\.(?:hex|base64)?digest|createHmac\(|hmac\.(?:new|New)\(",
        pattern: concat!(
            r#"(?:OpenSSL::HMAC\.(?:hexdigest|base64digest|digest)\(\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[A-Za-z_:.]+(?:\.new)?(?:\([^()\r\n]*\))?)\s*,\s*"#,
            r#"|createHmac\(\s*(?:"[^"\r\n]*"|'[^'\r\n]*'|[A-Za-z_$][A-Za-z0-9_.$]*)\s*,\s*(?:Buffer\.from\(\s*)?"#,
            r"|hmac\.new\(\s*(?:(?:bytes\.fromhex|(?:base64\.)?b64decode|binascii\.unhexlify)\(\s*)?",
            r"|hmac\.New\(\s*[A-Za-z0-9_.]+\s*,\s*\[\]byte\()",
            r#"[bB]?["'](?P<s>[^"'\s\\]{20,})["']"#,
        ),
        locate: constructor_key,
    },
    Spec {
        kind: "password_assignment",
        description: "a secret-named shell variable set by fish (set -gx NAME value) or csh (setenv NAME value), or given as a ${NAME:-default} default",
        prefilter: r"set[ \t]+-[A-Za-z]|setenv[ \t]|\$\{[A-Za-z0-9_.-]+:",
        pattern: concat!(
            r"(?m)^[ \t]*(?:set(?:[ \t]+-[A-Za-z]+)+|setenv)[ \t]+(?P<k>[A-Za-z_][A-Za-z0-9_]*)[ \t]+",
            r#"(?P<s>"[^"\r\n$]*"|'[^'\r\n]*'|[^\s"'$][^\s;]*)[ \t]*(?:[;#][^\r\n]*)?\r?$"#,
            r#"|\$\{(?P<dk>[A-Za-z_][A-Za-z0-9_]*):?[-=](?P<dv>[^}\s"'$]+)\}"#,
            // Spring's `${mail.smtp.pass:default}`.
            r#"|\$\{(?P<sk>[A-Za-z_][A-Za-z0-9_.-]*):(?P<sv>[^}\s"'$:?+=-][^}\s"'$]*)\}"#,
        ),
        locate: shell_value,
    },
    Spec {
        kind: "password_assignment",
        description: "a secret-named directive and its value separated by spaces in a configuration file (Mosquitto's remote_password, keepalived's auth_pass), a secret-named or Authorization header set by nginx (proxy_set_header X-Api-Key \"...\"), HAProxy's stats auth and insecure-password, Postfix's static: password map, strongSwan's PSK, an SNMP community, a Redis client's auth(\"...\")",
        // (Lower case, and a value's first character, not a type's bracket or an operator: in
        // code `_token` is followed by far more than a value.)
        prefilter: r"_(?:pass(?:wd|word)?|pwd|secret|token|psk)[ \t]+[!-'*+\-./0-9<>?@A-Z\[\]^_`a-z|~]|_header[ \t]+[\x22']?(?:X-|Authorization)|stats[ \t]+auth[ \t]|insecure-password[ \t]|_maps[ \t]*=[ \t]*static:|(?:PSK|EAP|XAUTH)[ \t]+\x22|r[ow]community6?[ \t]|auth[ \t]*\([ \t]*[\x22']|\]:[0-9]{1,5}[ \t]+[A-Za-z0-9._%+-]+@|dns[ \t]+(?:cloudflare|route53|digitalocean|duckdns|gandi|porkbun|hetzner)[ \t]",
        pattern: concat!(
            r"(?m)^[ \t]*(?P<k>[a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:password|passwd|pass|pwd|secret|token|psk))",
            r#"[ \t]+(?P<s>"[^"\r\n]+"|[^\s"'#;=:][^\s"'#;]*)[ \t]*;?[ \t]*\r?$"#,
            r#"|(?:proxy_set_header|add_header|more_set_input_headers|more_set_headers|grpc_set_header)[ \t]+["']?"#,
            r#"(?P<hk>X-[A-Za-z0-9-]+|Authorization)["']?[ \t]+(?P<hv>"[^"\r\n]*"|'[^'\r\n]*'|[^\s"';$][^\s;]*)"#,
            // HAProxy's `stats auth user:…` and `user NAME insecure-password …`; Postfix's
            // `smtp_sasl_password_maps = static:user:…`.
            r"|(?m:^)[ \t]*stats[ \t]+auth[ \t]+[^:\s]+:(?P<ha>\S+)",
            r"|[ \t]insecure-password[ \t]+(?P<hb>\S+)",
            r"|_maps[ \t]*=[ \t]*static:[^:\s]+:(?P<pm>\S+)",
            // strongSwan's `ipsec.secrets` (`… : PSK "…"`) and an SNMP community string.
            r#"|:[ \t]*(?:PSK|EAP|XAUTH)[ \t]+"(?P<ps>[^"\r\n]+)""#,
            r"|(?m:^)[ \t]*r[ow]community6?[ \t]+(?P<sc>[^\s#]+)",
            // Redis's `AUTH` from a client (`red:auth("…")`, `client.auth("…")`): one argument.
            r#"|[:.]auth[ \t]*\([ \t]*["'](?P<ra>[^"'\\\s]+)["'][ \t]*\)"#,
            // Postfix's `sasl_passwd` (`[smtp.host]:587 user@domain:…`) and a Caddy DNS
            // provider's token (`dns cloudflare …`).
            r"|(?m:^)[ \t]*\[[^\]\s]+\](?::[0-9]{1,5})?[ \t]+[^\s:]+:(?P<sp>\S+)[ \t]*\r?$",
            r"|dns[ \t]+(?:cloudflare|route53|digitalocean|duckdns|gandi|porkbun|hetzner)[ \t]+(?P<dn>[^\s{}]+)",
        ),
        locate: spaced_setting,
    },
    Spec {
        kind: "cli_password",
        description: "a key or token given to a command-line flag (--api-key KEY, --token TOKEN), an Erlang node's -setcookie, or openssl's -K key",
        prefilter: r"--(?:api-?key|(?:auth|access|api)-token|token|client-secret|secret-key)[ \t=]|-setcookie[ \t]|-K[ \t]+[0-9A-Fa-f]{8}",
        pattern: concat!(
            r"(?:(?m:^)|[ \t])(?:--(?P<k>api-?key|(?:auth|access|api)-token|token|client-secret|secret-key)(?:[ \t]+|=)",
            r#"|(?P<c>-setcookie)[ \t]+)(?P<s>"[^"\r\n$]+"|'[^'\r\n]+'|[^\s"'$<{\\`-][^\s"'`;|&)]*)"#,
            // (The command may go on over lines ending in `\`.)
            r"|(?:(?m:^)|[ \t;|&(])openssl[ \t](?:[^\r\n]|\\\r?\n)*?[ \t]-K[ \t]+(?P<x>[0-9A-Fa-f]{32,})(?:[ \t]|\r?$)",
        ),
        locate: cli_flag,
    },
    Spec {
        kind: "cli_password",
        description: "a password on a database, directory or transfer command line (sqlcmd -P, ldapsearch -w, lftp -u user,PASS, sqlplus user/PASS@db, net use \\\\host\\share PASS /user:NAME) or given to docker login (-p PASS, echo PASS | docker login --password-stdin)",
        prefilter: r"sqlcmd[ \t]|bcp[ \t]|osql[ \t]|lftp[ \t]|(?:docker|podman)[ \t]+login|--password-stdin|ldap(?:search|modify|add|delete|whoami|passwd)[ \t]|(?:sqlplus|expdp|impdp|sqlldr)[ \t]|(?i-u:net)[ \t]+(?i-u:use)[ \t]|smbclient[ \t]",
        pattern: concat!(
            r"(?:^|[^A-Za-z0-9_./-])(?:sqlcmd|bcp|osql)[ \t](?:(?:[^\n]|\\\r?\n)*?[ \t])?-P[ \t]*",
            r#"(?P<t>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'`,-][^\s"'`,]{3,})"#,
            r#"|(?:^|[^A-Za-z0-9_./-])lftp[ \t](?:(?:[^\n]|\\\r?\n)*?[ \t])?-u[ \t]+["']?[^,\s"']+,"#,
            r#"(?P<u>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"']+)"#,
            r#"|echo[ \t]+(?P<e>"[^"\r\n$]+"|'[^'\r\n]+'|[^\s"'$|]+)[ \t]*\|[ \t]*(?:sudo[ \t]+)?"#,
            r"(?:docker|podman|helm|oras)[ \t][^\r\n]*--password-stdin",
            // OpenLDAP's tools take the bind password after `-w`.
            r"|(?:^|[^A-Za-z0-9_.-])ldap(?:search|modify|add|delete|whoami|passwd)[ \t](?:(?:[^\n]|\\\r?\n)*?[ \t])?-w[ \t]+",
            r#"(?P<l>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'`,$-][^\s"'`,]{3,})"#,
            r"|(?:docker|podman)[ \t]+login[ \t](?:[^\r\n]*?[ \t])?(?:-p|--password)(?:[ \t]+|=)",
            r#"(?P<d>"[^"\r\n]+"|'[^'\r\n]+'|[^\s"'`,$-][^\s"'`,]{3,})"#,
            // Oracle's tools take `user/password@service` (`sqlplus -s hr/…@//host:1521/db`).
            r"|(?:^|[^A-Za-z0-9_./-])(?:sqlplus|expdp|impdp|sqlldr)[ \t]+(?:-[A-Za-z]+[ \t]+)*",
            r#"(?:(?i-u:userid)=)?[A-Za-z0-9_$#]+/(?P<o>[^\s@/"']{4,})@"#,
            // Windows' `net use` takes the password after the share or after `/user:NAME`
            // (`*` asks for it).
            r#"|(?:^|[^A-Za-z0-9_.-])(?i-u:net)[ \t]+(?i-u:use)[ \t](?:[^\r\n]*?[ \t])?"#,
            r#"(?:\\\\[^\s"]+|/(?i-u:user|u):(?:"[^"\r\n]+"|[^\s"]+))[ \t]+"#,
            r#"(?P<w>"[^"\r\n]+"|[^\s"`/*%$-][^\s"`]{3,})"#,
            // Samba's `smbclient -U 'DOMAIN\user%password'`.
            r#"|(?:^|[^A-Za-z0-9_./-])smbclient[ \t](?:[^\r\n]*?[ \t])?(?:-U|--user(?:name)?)(?:[ \t]+|=)"#,
            r#"["']?[^\s"'%]+%(?P<x>[^\s"'%$][^\s"']{3,})"#,
        ),
        locate: cli_password,
    },
    Spec {
        kind: "prose_credential",
        description: "a value right after \"password\", \"passphrase\", \"pw\", \"credential\", \"API key\", \"pre-shared key\" or a bold **pass:** label in prose, quoted as its markup quotes (its password is `...`, :Password: ``...``, {{...}}, ''...'', <strong>...</strong>)",
        // (Prefilters start from a literal: one that starts from a space or a colon keeps a
        // thread of the one pass alive at every such byte of every text.)
        prefilter: r"(?i-u)(?:pass(?:word|wd|phrase)|pre-?shared key|pw|credential|api key)(?:[ \t]+(?:is|was|to|of))?[ \t]*:{0,2}[ \t]*(?:`|''|\{\{|\*\*|<strong>|<b>|<code>|\x22)|(?i-u)pass:\*\*[ \t]*`",
        // Quoted as each markup quotes: Markdown's backquotes, reStructuredText's double ones,
        // DokuWiki's `''…''`, Jira's `{{…}}`, bold, HTML.
        pattern: concat!(
            r"(?:(?i-u:pass(?:word|wd|phrase)|pre-?shared key|(?-u:\b)pw|credential|api key)(?:[ \t]+(?i-u:is|was|to|of))?[ \t]*:{0,2}[ \t]*",
            // A bold `**pass:**` label.
            r"|(?-u:\b)(?i-u:pass):\*\*[ \t]*)",
            r#"(?:``|''|\{\{|\*\*|<strong>|<b>|<code>|`|")(?P<a>[^`"\s]{8,}?)(?:``|''|\}\}|\*\*|</strong>|</b>|</code>|`|")(?:[\s.,;:)<]|$)"#,
        ),
        locate: prose_credential,
    },
    Spec {
        kind: "prose_credential",
        description: "a `user` / `...` pair of backquoted values on a line that speaks of a login, user, account or credentials",
        prefilter: r"`[ \t]*/[ \t]*`",
        pattern: r"`[^`\s/]{1,40}`[ \t]*/[ \t]*`(?P<b>[^`\s]{8,})`",
        locate: prose_credential,
    },
    Spec {
        kind: "prose_credential",
        description: "a random-looking or chosen value that a key, token or secret \"is\", or that follows \"API key\", in prose (the new key is ...)",
        prefilter: r"(?i-u)(?:(?:key|token|secret)[ \t]+is|api[ \t]key)[ \t]",
        pattern: r"(?-u:\b)(?i-u:(?:key|token|secret)[ \t]+is|api[ \t]key)[ \t]+`?(?P<d>[^\s`'\x22]{8,})`?",
        locate: prose_credential,
    },
    Spec {
        kind: "prose_credential",
        description: "an unquoted value right after \"password\", \"passphrase\" or \"login\" (also a bold **Password:** label), or one that a password, pw or login \"is\", in prose (uses the passphrase ..., the root pw on the NAS is ...)",
        prefilter: r"(?i-u)(?:pw|password|passphrase|login)(?::?\*\*:?)?[ \t]",
        pattern: concat!(
            // The value right after the word (`uses the passphrase …`, a bold label's
            // `**Password:** …`) or after "is" a few words on.
            r"(?i-u:(?-u:\b)pw|pass(?:word|phrase)|login)(?::?\*\*:?|(?:[ \t]+[A-Za-z0-9._-]+){0,4}?[ \t]+(?i-u:is|was|now))?[ \t]+",
            r#"(?P<e>[^\s`'"]{8,})"#,
        ),
        locate: prose_credential,
    },
    Spec {
        kind: "prose_credential",
        description: "a value after the word for password in another language: after a colon, an equals sign or a dash, quoted or not (Passwort: ..., mot de passe : ..., contraseña: ..., пароль: ..., 密码：...), or that a sentence says the password is (la contraseña del usuario es ..., het wachtwoord is ..., パスワードは「...」です, 密码是...)",
        // The words alone: one copy of them in the one pass, whose every state holds them.
        prefilter: foreign_password_word!(),
        pattern: concat!(
            foreign_password_word!(),
            // (A bold label's colon, `**Passwort:**`, too.)
            r#"(?:[ \t]*(?::(?:\*\*)?|：|=|[ \t]+(?:-|–))[ \t]*(?:[„“"'«「『`][ \t]*)?(?P<a>[^\s"'`„“”«»「」『』，。、；！？]{8,})"#,
            r"|(?:(?:[ \t]+[^\s]+){0,6}?[ \t]+(?:ist|lautet|est|es|é|è|is|är|jest|to|brzmi)[ \t]+|(?:は|是|为|為|은|는)[ \t]*)",
            r#"(?:[„“"'«「『`][ \t]*)?(?P<e>[^\s"'`„“”«»「」『』，。、；！？]{8,}))"#,
        ),
        locate: prose_credential,
    },
    Spec {
        kind: "prose_credential",
        description: "an unquoted user / password pair on a line that speaks of logging in (log in with admin / ...)",
        // (From the login word: ` / ` is every division in code.)
        prefilter: r"(?i-u)log[ \t-]?in|sign[ \t]in|/pass",
        pattern: concat!(
            r"(?i-u:log[ \t-]?in|sign[ \t]in|/pass)[^\r\n]{0,60}?[ \t]",
            r#"[A-Za-z0-9_.@-]{2,40}[ \t]+/[ \t]+(?P<f>[^\s`'"]{8,})"#,
        ),
        locate: prose_credential,
    },
    Spec {
        kind: "prose_credential",
        description: "a user / password pair that ends a line (a chat's answer) a few lines after a question about a login or credentials (anyone know the login for …? / admin / …)",
        prefilter: r"(?i-u)creds|credential|log[ \t-]?in|passw",
        pattern: concat!(
            // (The line's start is checked by the locator: a bounded run of any character here
            // would cost every process's first texts.)
            r"(?m)[ \t>:][ \t]*[A-Za-z0-9_.@-]{2,40}[ \t]+/[ \t]+",
            r#"(?P<f>[^\s`'"/]{8,})[ \t]*\r?$"#,
        ),
        locate: answered_login,
    },
    Spec {
        kind: "password_assignment",
        description: "a secret-named Clojure or EDN keyword given a string in a map (:password \"...\")",
        prefilter: r"(?:password|passwd|secret|token|api-key)[ \t]+\x22",
        pattern: r#":(?P<k>[a-z0-9-]*(?:password|passwd|secret|token|api-key))[ \t]+(?P<s>"[^"\s\\]+")"#,
        locate: dsl_setting,
    },
];
