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
//! `github_token`), and because no rule accepts a value containing a `[REDACTED:…]` marker,
//! masking masked text changes nothing. Changing any rule bumps [`MASK_RULES_VERSION`].
//! `crates/ctxpack-core/tests/secrets/corpus.jsonl` holds a positive for every kind and the
//! near misses below; `docs/security.md` scores it against other scanners.
//!
//! | kind | what it catches | what is replaced |
//! |---|---|---|
//! | `private_key` | PEM and OpenSSH private keys: `-----BEGIN … PRIVATE KEY-----` (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP `… PRIVATE KEY BLOCK`), also with `\n` escapes inside a string literal, and a block cut short by a chunk boundary; PuTTY `.ppk` private lines; a whole PEM private key in base64 (`LS0tLS1CRUdJTi…`, a kubeconfig's `client-key-data`) | the whole block, BEGIN to END line inclusive; the private lines; the base64 |
//! | `password_hash` | crypt(3) hashes as in `/etc/shadow` and htpasswd (`$1$`, `$apr1$`, `$2a$`/`$2b$`/`$2y$` bcrypt, `$5$`, `$6$`, `$y$` yescrypt, `$argon2id$…`), LDAP/htpasswd `{SHA}`/`{SSHA}`/`{MD5}` and Django `pbkdf2_sha256$…` | the hash |
//! | `anthropic_api_key` | `sk-ant-…` keys (`sk-ant-api03-…`, `sk-ant-admin01-…`) | the key |
//! | `openai_api_key` | `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` keys of 32 or more characters mixing upper case, lower case and digits | the key |
//! | `aws_access_key_id` | `AKIA` (long-term) and `ASIA` (temporary) access key ids: the prefix and 16 base-32 characters | the key id |
//! | `aws_secret_access_key` | a 40-character secret assigned to a name like `aws_secret_access_key`, `aws_secret_key` or `SecretAccessKey` | the value |
//! | `github_token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` followed by 36 or more characters, and fine-grained `github_pat_…` tokens | the token |
//! | `gitlab_token` | `glpat-` (personal), `gldt-`, `glrt-`, `glptt-`, `glft-`, `glsoat-`, `gloas-` tokens of 20 or more characters | the token |
//! | `slack_token` | `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxe-`, `xoxo-` tokens and `xapp-` app tokens (they always contain digits) | the token |
//! | `stripe_key` | live secret and restricted keys: `sk_live_…`, `rk_live_…` (and `_prod_`); webhook signing secrets `whsec_…` | the key |
//! | `google_api_key` | `AIza` followed by 35 characters | the key |
//! | `google_oauth_token` | OAuth client secrets `GOCSPX-…` and access tokens `ya29.…` | the token |
//! | `sendgrid_api_key` | `SG.` + 22 + `.` + 43 characters | the key |
//! | `twilio_api_key` | `SK` + 32 hex digits (an API key SID, used with its secret) | the key |
//! | `npm_token` | `npm_` + 36 characters | the token |
//! | `pypi_token` | `pypi-AgE…` API tokens (PyPI and TestPyPI) | the token |
//! | `dockerhub_token` | `dckr_pat_…`, `dckr_oat_…` | the token |
//! | `huggingface_token` | `hf_` + 34 characters mixing upper and lower case | the token |
//! | `groq_api_key` | `gsk_` + 52 characters | the key |
//! | `replicate_token` | `r8_` + 37 characters | the token |
//! | `perplexity_api_key` | `pplx-` + 48 characters | the key |
//! | `xai_api_key` | `xai-` + 80 characters | the key |
//! | `langsmith_api_key` | `lsv2_pt_…`, `lsv2_sk_…` | the key |
//! | `shopify_token` | `shpat_`, `shpca_`, `shppa_`, `shpss_` + 32 hex digits | the token |
//! | `digitalocean_token` | `dop_v1_`, `doo_v1_`, `dor_v1_` + 64 hex digits | the token |
//! | `mailchimp_api_key` | 32 hex digits + `-us` and a data-centre number | the key |
//! | `databricks_token` | `dapi` + 32 hex digits | the token |
//! | `postman_api_key` | `PMAK-` + 24 + `-` + 34 hex digits | the key |
//! | `grafana_token` | Grafana Cloud `glc_…` and service-account `glsa_…` tokens | the token |
//! | `newrelic_key` | `NRAK-` + 27 characters | the key |
//! | `sentry_token` | `sntrys_…` (organisation) and `sntryu_…` (user) auth tokens | the token |
//! | `vault_token` | HashiCorp Vault `hvs.…` and `hvb.…` tokens | the token |
//! | `terraform_token` | HCP Terraform `….atlasv1.…` tokens | the token |
//! | `doppler_token` | `dp.pt.`, `dp.st.`, `dp.sa.`, `dp.ct.`, `dp.scim.`, `dp.audit.` tokens | the token |
//! | `pulumi_token` | `pul-` + 40 hex digits | the token |
//! | `supabase_token` | `sbp_` + 40 hex digits | the token |
//! | `age_secret_key` | `AGE-SECRET-KEY-1…` | the key |
//! | `azure_ad_client_secret` | Microsoft Entra ID client secrets (three characters, a digit, `Q~`, 31–34 characters) | the secret |
//! | `mapbox_token` | secret tokens `sk.eyJ…` (public `pk.` tokens are left) | the token |
//! | `square_token` | `sq0atp-…`, `sq0csp-…` | the token |
//! | `linear_api_key` | `lin_api_` + 40 characters | the key |
//! | `atlassian_api_token` | `ATATT3…` | the token |
//! | `telegram_bot_token` | bot id, `:AA` and 33 characters, also inside `https://api.telegram.org/bot…/` | the token |
//! | `webhook_url` | Slack (`hooks.slack.com/services/…`, `/workflows/…`, `/triggers/…`), Discord (`discord.com/api/webhooks/…`, also `/api/v10/webhooks/…`) and Microsoft Teams (`….webhook.office.com/webhookb2/…/IncomingWebhook/…`, `outlook.office.com/webhook/…`) incoming-webhook URLs | the secret path segment; workspace, channel, group and tenant ids are kept |
//! | `jwt` | JSON Web Tokens: `eyJ…` header, `ey…` payload and (optional) signature, dot-separated base64url | the token |
//! | `azure_storage_key` | `AccountKey=` and `SharedAccessKey=` in Azure connection strings; a SAS token's `sig=` next to its `sv=`/`sp=`/`se=` parameters | the key or signature |
//! | `authorization_header` | the credentials of an `Authorization:` or `Proxy-Authorization:` header (`Bearer`, `Basic`, `Token`, `Bot`, `ApiKey`, `sso-key`, … or no scheme) in HTTP dumps, `curl -H`, code and config; a token after a bare `Bearer` (logs) | the credentials |
//! | `cli_password` | a password on a command line: `curl`/`wget`/httpie/`xh` `-u`/`--user`/`-a`/`--auth user:PASS` (also across `\` continuation lines), `mysql`/`mysqldump`/`mariadb -pPASS`, `redis-cli -a PASS`, `sshpass -p PASS` | the password, quotes kept |
//! | `registry_auth` | Docker `config.json` `"auth"` and `.npmrc` `_auth` values that decode to `user:password`; a Kubernetes pull secret's `.dockerconfigjson` / `.dockercfg` that decodes to a Docker config with credentials | the base64 value |
//! | `registry_token` | the token under a host in Composer's `auth.json` (`github-oauth`, `gitlab-token`, `gitlab-oauth`, `bearer`); the first host of each block | the token |
//! | `connection_string_password` | the password in `scheme://user:PASSWORD@host` for any scheme (postgres, mysql, mongodb+srv, redis, amqp, https, …), as in `.git-credentials` | the password only |
//! | `url_credential` | a generated token as a URL's whole user part (`https://TOKEN@host`), after a `/key/`, `/token/`, `/apikey/`, `/secret/` path segment, or in an `X-Amz-Signature=`, `X-Goog-Signature=`, `signature=`, `sig=`, `hmac=` or `key=` query parameter | the token |
//! | `pgpass_password` | the last field of a PostgreSQL `.pgpass` line, `host:port:database:user:password` (the host a name, an address or `*`; the port digits or `*`; `\:` escapes allowed) | the password |
//! | `netrc_password` | the password of a `.netrc` / `.authinfo` entry: `machine HOST login USER password PASS`, on one line or several | the password |
//! | `xml_secret` | the text of a secret-named XML element (`<password>`, `<ApiKey>`, `<secret>` …, e.g. Maven `settings.xml`), `<add key="…Password" value="…"/>` (.NET `appSettings`, NuGet `ClearTextPassword`), an element whose `name` or `key` attribute is secret-named with a `value` attribute or text (`<property name="db.password" value="…"/>`, `<entry key="smtp.password">…</entry>`, .NET `<setting name="SmtpPassword"><value>…</value></setting>`), and Hadoop-style `<name>fs.s3a.secret.key</name><value>…</value>`; Maven's and Jenkins' braced ciphertext (`{COQL…=}`) counts as a value | the value |
//! | `yaml_block_secret` | a YAML block scalar (`\|`, `>`, `\|-`, `>-` …) under a secret-named key | the block's lines, from the first content character to the end of the last line |
//! | `dockerfile_secret` | `ENV NAME value` / `ARG NAME value` (the space-separated form) with a secret-named `NAME`; the `NAME=value` form is `password_assignment` | the value |
//! | `code_credential` | a password passed as a string literal in code: PHP `define('DB_PASSWORD', '…')` (any secret-named constant), the second argument of `new NetworkCredential(user, "…")`, `PasswordAuthentication`, `UsernamePasswordCredentials`, `HTTPBasicAuth`/`HTTPDigestAuth`, `BasicAuth`, `SetBasicAuth`, `basicAuth`, `basic_auth` (also `Some("…")`), `auth(user, "…")`, `auth=(user, "…")`, `login(user, "…")`, and the third of JDBC `getConnection(url, user, "…")` and Go's `smtp.PlainAuth("", user, "…", host)`, OkHttp's `Credentials.basic(user, "…")`; the one string argument of a setter or builder named after a credential (`setPassword("…")`, `withPassword("…")`, `setApiKey("…")`, `.password("…")`, `.clientSecret("…")`); four or more characters | the password, quotes kept |
//! | `password_assignment` | a value assigned to a name ending in `password`, `passwd`, `passphrase`, `pwd`, `secret`, `token`, `api_key`/`apikey`, `access_key` or `private_key` (optionally followed by `key` or `value`, so `secret_key`, `clientSecret`, `DB_PASSWORD`, `x-api-key`), or in `pass` as an upper-case word (`DB_PASS`, `SMTP_PASS`) or the whole name (`--pass`), with `=`, `:`, `:=` or `=>`, in env, YAML, INI, JSON, XML-attribute, URL-query, CLI-flag and code styles, and after a type annotation (`db_password: str = "…"`, `static TOKEN: &str = "…"`), also through an index (`$config['db_password'] = …`); the value is quoted or bare, at least 6 characters, no whitespace. Also: the `value` of a name/value pair whose `name` is secret-named (Kubernetes `env` entries `- name: DB_PASSWORD` / `value: …`, ECS `{"name": …, "value": …}`), and a quoted passphrase with spaces under an upper-case password or secret name in an env file (`DB_PASSWORD="correct horse battery staple"`) | the value, quotes kept |
//! | `high_entropy_key` | a random-looking value (20 or more base64 characters mixing upper case, lower case and digits with Shannon entropy ≥ 3.5 bits, 32 or more hex digits, Laravel's `base64:…`, a comma-separated list of such keys, or — quoted — 32 or more printable characters of three classes with punctuation and entropy ≥ 4 bits) assigned to a name whose last word is `key`, `keys`, `key_base`, `salt`, `pepper`, `hmac`, `credentials` or `auth`: `secret_key_base`, `APP_KEY`, `APP_KEYS`, `FERNET_KEY`, `signingKey`, `ENCRYPTION_KEY`, `PASSWORD_SALT`, Drupal's `$settings['hash_salt']`; and WordPress's `define('AUTH_KEY', '…')` / `define('NONCE_SALT', '…')` | the value |
//!
//! Names are "secret-named" for `xml_secret`, `yaml_block_secret` and `dockerfile_secret` by the
//! same words as `password_assignment`.
//!
//! # What is deliberately not masked
//!
//! Masking errs towards hiding, but a false positive destroys evidence: a rule that fires on
//! every second line of code would bury the real findings and waste the reader's budget. So
//! these are left alone:
//!
//! - **References and templates**: `${VAR}`, `$VAR`, `$(cmd)`, `{{ … }}`, `%VAR%`, `@VAR@`,
//!   `%(name)s`, `%s`, `{name}`, `<your-password>` and other `<…>` placeholders, anything
//!   starting with `your` or `replace`, containing `YOUR`/`Your`/`your_`/`replace_me`, or ending
//!   in `_here`; and references to a secret kept elsewhere: AWS ARNs (`arn:…`, also a
//!   colon-delimited `…:secret:name` inside one), `vault:`, `ref+`, `secretsmanager:`, `ssm:`,
//!   `sops:`, `keyvault:`, `env:` and `file:` values, Google Secret Manager paths
//!   (`projects/…/secrets/…`), `op://` and other URLs, CloudFormation `!Ref` and
//!   `{{resolve:…}}`, `@Microsoft.KeyVault(…)`, and Kubernetes `secretKeyRef` / `secretName`
//!   (they name a secret; their `key: password` is the name of a field).
//! - **Stand-ins**: values containing a run of four `x`, `X` or `*`, `•••`, or an ellipsis
//!   (`sk-...`, `ghp_xxxx…`, `AKIAXXXXXXXXXXXXXXXX`); vendor-shaped tokens whose last 16
//!   characters use at most three distinct characters (`T00000000/B00000000/XXXXXXXX…`); and
//!   vendor-shaped tokens containing `your`, `replace`, `_here` or `placeholder`.
//! - **Placeholder words** (case-insensitive, whole value, also bracketed or as alternatives:
//!   `[REDACTED]`, `true/false`): `changeme`, `change_me`, `change-me`, `changeit`,
//!   `changethis`, `change_this`, `password`, `passwd`, `pass`, `pwd`, `secret`, `token`,
//!   `example`, `placeholder`, `redacted`, `dummy`, `hidden`, `masked`, `default`, `empty`,
//!   `required`, `optional`, `string`, `none`, `null`, `nil`, `undefined`, `true`, `false`,
//!   `yes`, `no`, `todo`, `fixme`, `tbd`; and values made only of `*`, `x`, `.`, `-`, `_`.
//!   `changeme` and `changeit` are well-known defaults: printing them reveals nothing a reader
//!   of the documentation does not already know, and they are everywhere in sample
//!   configuration.
//! - **Published examples**: values that a vendor or standard publishes as *the* example and
//!   that are public by design — real working code carries them and they grant nothing — are
//!   listed verbatim (`PUBLISHED_EXAMPLES`) and never masked by any rule: the Azure Storage
//!   emulator's (Azurite's) well-known account key, jwt.io's sample token (signed with the
//!   published `your-256-bit-secret`), RFC 7617's `Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==`, and the
//!   Kubernetes documentation's Secret example (`MWYyZDFlMmU2N2Rm` / `1f2d1e2e67df`). Example
//!   keys that *stand in* for a live credential of a real service are masked like the key they
//!   imitate — AWS's `AKIAIOSFODNN7EXAMPLE` / `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY` and
//!   GitHub's documented `ghs_16C7e42F292c6912E7710c838347Ae178B4a` included: they have the full
//!   shape of a live key, a rule could tell them apart only by an ever-growing list, tools and
//!   tests (ctxpack's own among them) use them as the canary that masking works, and masking
//!   one costs a reader nothing but an example value. No rule keys on the words `EXAMPLE` or
//!   `FAKE` inside a value.
//! - **Public, test-mode and identifying values**: public keys and certificates (also a
//!   base64-encoded certificate in a kubeconfig), `ssh-… AAAA…` public keys, Stripe `sk_test_…`,
//!   `rk_test_…`, `pk_test_…` and publishable `pk_live_…` keys, Twilio account SIDs (`AC…`),
//!   Google OAuth client ids, Mapbox `pk.` tokens, a Sentry DSN's client key and an Algolia
//!   search-only `apiKey` in a DocSearch configuration (beside `appId` and `indexName`): they
//!   ship in web pages. Also UUIDs, git SHAs and checksums under names
//!   that are not secret-named; and values under key names that are identifiers or public
//!   material: `public`/`publishable`/`pub`, `primary`, `foreign`, `partition`, `sort`,
//!   `range`, `cache`, `idempotency`, `dedup`, `lookup`, `hash`, `row`, `map`, `index` keys.
//! - **The name of a credential rather than its value**: a value of letters and `_`/`-`/`.`
//!   only — separated, all lower case, or a camelCase identifier — that itself contains
//!   `pass`, `pwd`, `secret`, `token`, `key`, `auth` or `cred` (`"refresh_token"`,
//!   `"X-Api-Key"`, `token=authtoken`, `"maxTokens"`; `Password=FakePassword` is still masked).
//! - **Plain words and labels assigned to a token or key name**: tokens and API keys are
//!   generated, so for names ending in `token`, `api_key`, `access_key` or `private_key` the
//!   value must mix two of lower case, upper case and digits, or be 20 characters or longer,
//!   and must not be words, numbers and short tags joined by `_`, `-` or `.` (`zToken =
//!   "coalesce"` in a lexer, `"access_token": "access-1"` in a test). Names with `pass`, `pwd`
//!   or `secret` take any value: people choose passwords that are plain words. The same holds
//!   for `Authorization` credentials (`Bearer blahblahblah` stays), URL tokens and
//!   `high_entropy_key`, whose values must also look random: not identifier words
//!   (`sqlite3BtreePayloadSize`), with entropy as above.
//! - **Code, not data** (bare, unquoted values only): function calls, indexing, generics and
//!   closures (`get_password()`, `os.environ["X"]`, `Option<String>`, `|token: &Token|`),
//!   attribute and path access (`self.token`, `process.env.TOKEN`, `cfg.Password`, `token?`,
//!   anything containing `::`), values starting with `* & ! | # @` (dereferences, references,
//!   negations, YAML tags and comments, annotations), any bare value followed by `,` or `;`
//!   after a spaced `=` or a `:` (`token: Token,`, `nToken = iEnd-iStart;`), a bare key value
//!   followed by `(`, `[`, `.`, `->`, `?` or `!`, and a type annotation followed by `=`
//!   (`NEXT_TOKEN: AtomicUsize = …`). After a type annotation only a string literal is data,
//!   and only a credential-shaped one (eight or more characters mixing letters and digits, not
//!   words, not a dotted number or a braced GUID): `const SERVICE_PASSWORD: &str = "TRUNCATE"`
//!   names a protocol string. A bare word of letters only (or digits only) after a spaced `=`,
//!   `:=`, `=>` or a `:` is read as a variable, type or prose (`password: str`, `token =
//!   next_token`, `max_token = 100000`) — unless the name is UPPER_CASE (`DB_PASSWORD:
//!   postgres`) or the `=` is tight (`PASSWORD=hunter`, as in env files, URL queries and
//!   `Password=…;` connection strings), where it is data. A bare word mixing letters and digits
//!   (`password: hunter2`) is masked. In code, `pass` is a pass over something
//!   (`render_pass`, `first_pass`, `bypass`), so only upper-case `…_PASS` names and `pass`
//!   itself count.
//! - **Comparisons and paths**: `==` and `::` are not assignments (`if token == "…"`,
//!   `token::Kind`); a lower-case absolute or relative path (`PWD=/home/me`,
//!   `secret: /run/secrets/db`) and anything containing `://` (the connection-string rule
//!   handles URLs) are not secrets.
//! - **Values with whitespace and prose**: in code, YAML and JSON a quoted string with spaces
//!   assigned to `password` is almost always a prompt or a message, so it is not masked; only
//!   an env-file line (`NAME="…"` or `export NAME='…'`, the name upper case and ending in a
//!   password or secret word) holds a passphrase, and even there a message is left alone: a
//!   value with words such as `password`, `enter`, `invalid`, `your`, `the`, ending in `.`, `:`,
//!   `?`, `!` or `,`, or holding `$`, `%`, `{`, `<`. Nor is a one-line YAML block of prose
//!   under a secret-named key masked, nor an `Authorization` header or `Bearer` mentioned in a
//!   sentence.
//! - **Passwords named without a literal in code**: `new NetworkCredential(user, password)`,
//!   `define('DB_PASSWORD', getenv('DB_PASSWORD'))`, `HTTPBasicAuth(settings.USER,
//!   settings.PASSWORD)`, `login("admin", "password")` (a placeholder word); a `.pgpass`-shaped
//!   line whose host is a number (`00:11:22:33:44:55`) or whose fields are the format's names
//!   (`hostname:port:database:username:password`).
//! - **Command lines and headers without a password**: `mysql -p` (a prompt),
//!   `curl -u "$USER:$PASS"`, `curl -u "$API_KEY:"`, `curl -u me@example.com:api_token` (the
//!   name of what goes there), `ARG NPM_TOKEN` without a value, and `Basic` credentials that
//!   decode to a placeholder password (`dXNlcm5hbWU6cGFzc3dvcmQ=` is `username:password`).
//!
//! Limits: a secret split across two chunks, a private-key chunk that holds neither the BEGIN
//! nor the END line, names that do not end in a keyword (`password_confirmation`), a password
//! passed positionally to a call the rules do not name (`Client(sid, "auth-token")`), the
//! hosts after the first in one Composer `auth.json` block, a credential-shaped literal after a type
//! annotation that is a plain word (`password: str = "postgres"`), a `.netrc` entry without a
//! `login`, vendor tokens without a rule of their own outside an assignment, and
//! hashes or keys that are simply long random strings with no name around them are not caught.
//! Published test passwords and test keys (`password=alice-pw` in a test, a self-signed test
//! certificate's key) are masked: the rules judge shapes, not intent.
//!
//! # Speed
//!
//! One pass of a lazy DFA of each rule's required literals or short patterns (`AKIA`, `ghp_`,
//! `://`, `password`, …) runs first; a rule's full expression runs only when its literal
//! occurs, and text with none of them is returned borrowed after that single pass.
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
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::{Arc, OnceLock};

use regex::{Captures, Regex};
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::util::pool::Pool;
use regex_automata::{Input, MatchKind, PatternSet};

/// Bumped whenever the rule set changes (stored text is masked at index time).
pub const MASK_RULES_VERSION: u32 = 3;

/// How every marker starts; no rule accepts a value that contains it, which is what makes
/// masking idempotent.
const MARKER_PREFIX: &str = "[REDACTED:";

/// The marker that replaces a secret of `kind`: `[REDACTED:<kind>]`.
pub fn marker(kind: &str) -> String {
    format!("{MARKER_PREFIX}{kind}]")
}

/// Values that vendors and standards publish as *the* example and that are public by design:
/// real working code carries them and they grant nothing. See "Published examples" in the
/// module documentation for why the AWS example pair is not here.
const PUBLISHED_EXAMPLES: &[&str] = &[
    // The Azure Storage emulator's (Azurite's) account key: the same fixed value on every
    // machine that runs the emulator.
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    // jwt.io's sample token, signed with the published key `your-256-bit-secret`.
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    // RFC 7617's Basic credentials (`Aladdin:open sesame`), repeated by MDN and most HTTP docs.
    "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
    // The Kubernetes documentation's Secret example (`1f2d1e2e67df`, plain and base64).
    "MWYyZDFlMmU2N2Rm",
    "1f2d1e2e67df",
];

/// Picks the byte range to replace, or `None` when the match is not a secret. The range
/// usually lies inside the match; a YAML block scalar's lines follow it.
type Locate = fn(&Captures<'_>, &str) -> Option<(usize, usize)>;

/// One documented rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The snake_case kind, as written in the marker and counted in the redaction summary.
    pub kind: &'static str,
    /// What the rule catches, in one sentence.
    pub description: &'static str,
    pattern: &'static str,
    /// Compiled on first use: most texts never reach most rules past the prefilter, and
    /// compiling all sixty costs a short command more than its work.
    regex: OnceLock<Regex>,
    locate: Locate,
    marker: String,
}

impl Rule {
    /// The rule's full expression.
    fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| {
            Regex::new(self.pattern).expect("mask rule patterns are constants covered by tests")
        })
    }

    /// Replaces every accepted match in `text`, or returns `None` when there is none.
    fn apply(&self, text: &str) -> Option<(String, u64)> {
        let mut out = String::new();
        let mut last = 0;
        let mut count = 0;
        for caps in self.regex().captures_iter(text) {
            let Some((start, end)) = (self.locate)(&caps, text) else {
                continue;
            };
            // A secret that runs past its match (a block scalar) can swallow the next match's
            // secret; the check also keeps a mistake in a rule from ever slicing backwards.
            if start < last || end <= start || !is_maskable(&text[start..end]) {
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

/// The checks every rule shares: a marker is never masked again (idempotence) and a published
/// example is not a secret.
fn is_maskable(secret: &str) -> bool {
    !secret.contains(MARKER_PREFIX) && !PUBLISHED_EXAMPLES.contains(&secret)
}

/// A rule as written in the source, before compilation.
struct Spec {
    kind: &'static str,
    description: &'static str,
    /// A necessary condition for an accepted match: wherever the rule masks something, this
    /// pattern occurs in the text.
    prefilter: &'static str,
    pattern: &'static str,
    locate: Locate,
}

/// A vendor token recognised by its prefix and shape alone; the `s` group is the token.
const fn vendor(
    kind: &'static str,
    description: &'static str,
    prefilter: &'static str,
    pattern: &'static str,
) -> Spec {
    Spec {
        kind,
        description,
        prefilter,
        pattern,
        locate: vendor_token,
    }
}

/// The words that make a name secret-named, as a regex alternation. `pass` is accepted only as
/// a whole word of the name (`DB_PASS`, not `bypass`); [`secret_name`] checks that.
macro_rules! secret_word {
    () => {
        r"(?:passwd|password|passphrase|pass|pwd|secret|token|api[_.-]?key|access[_.-]?key|private[_.-]?key)"
    };
}

/// The prefilter of every rule keyed on a secret-named name. Prefilters fold case for ASCII
/// only (`(?i-u)`): Unicode folding (`k` also matches the Kelvin sign) makes the set's
/// automaton several times larger and the one pass over every text slower.
macro_rules! secret_word_prefilter {
    () => {
        r"(?i-u)pass|pwd|secret|token|api[_.-]?key|access[_.-]?key|private[_.-]?key"
    };
}

/// The rules, in the order they run (more specific first). Keep the module documentation's
/// table in step with this list; a test checks that every kind is documented.
const SPECS: &[Spec] = &[
    Spec {
        kind: "private_key",
        description: "PEM, OpenSSH or PuTTY private key, or a base64-encoded PEM private key",
        prefilter: r"PRIVATE KEY|Private-Lines|LS0tLS1CRUdJTi",
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
            // PuTTY's .ppk: the lines after `Private-Lines: N` (the public lines are public).
            r"|Private-Lines:[ \t]*[0-9]{1,3}[ \t]*\r?\n",
            r"(?P<ppk>(?:[A-Za-z0-9+/=]{4,}[ \t]*\r?\n)*[A-Za-z0-9+/=]{4,})[ \t]*(?:\r?\n|$)",
            // A whole PEM file in base64, as in a kubeconfig's `client-key-data`; the locate
            // function decodes the head to tell a private key from a certificate.
            r"|(?P<b64>LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}={0,2})",
        ),
        locate: private_key,
    },
    Spec {
        kind: "password_hash",
        description: "crypt(3), htpasswd, LDAP or Django password hash",
        prefilter: concat!(
            r"\$(?:2[abxy]?|1|5|6|apr1|y|gy|7|argon2id|argon2i|argon2d)\$",
            r"|\{S?(?:SHA|MD5)|pbkdf2_sha(?:1|256)\$",
        ),
        pattern: concat!(
            r"(?P<s>\$2[abxy]?\$[0-9]{2}\$[./A-Za-z0-9]{53}",
            r"|\$(?:1|apr1)\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}",
            r"|\$[56]\$(?:rounds=[0-9]{1,9}\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{43}(?:[./A-Za-z0-9]{43})?",
            r"|\$(?:y|gy|7)\$[./A-Za-z0-9]{1,64}\$[./A-Za-z0-9]{1,86}\$[./A-Za-z0-9]{43}",
            r"|\$argon2(?:id|i|d)\$(?:v=[0-9]{1,3}\$)?m=[0-9]{1,9},t=[0-9]{1,9},p=[0-9]{1,3}\$[A-Za-z0-9+/]{8,}\$[A-Za-z0-9+/]{16,}",
            r"|\{S?(?:SHA(?:256|512)?|MD5)\}[A-Za-z0-9+/]{20,}={0,2}",
            r"|pbkdf2_sha(?:1|256)\$[0-9]{1,7}\$[A-Za-z0-9./+]{1,64}\$[A-Za-z0-9+/]{20,}={0,2})",
            r"(?:[^./A-Za-z0-9+=]|$)",
        ),
        locate: vendor_token,
    },
    Spec {
        kind: "anthropic_api_key",
        description: "Anthropic API key (sk-ant-...)",
        prefilter: r"sk-ant-",
        pattern: r"(?-u:\b)(?P<s>sk-ant-(?:[a-z]{2,10}[0-9]{0,3}-)?[A-Za-z0-9_-]{20,300})",
        locate: vendor_token,
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
        locate: vendor_token,
    },
    Spec {
        kind: "aws_secret_access_key",
        description: "AWS secret access key (40 characters) assigned to an aws_secret_access_key-like name",
        prefilter: r"(?i-u)secret[_.-]?access|aws[_.-]?secret",
        pattern: concat!(
            r"(?i)(?:aws[_.-]?secret[_.-]?(?:access[_.-]?)?key|secret[_.-]?access[_.-]?key)",
            r#"(?:\\?["'])?[ \t]*(?:=>|:=|=|:)[ \t]*(?:\\?["'])?"#,
            r"(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
        ),
        locate: vendor_token,
    },
    Spec {
        kind: "github_token",
        description: "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_ and 36+ characters; github_pat_...)",
        prefilter: r"gh[pousr]_|github_pat_",
        pattern: r"(?-u:\b)(?P<s>gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?-u:\b)",
        locate: vendor_token,
    },
    Spec {
        kind: "gitlab_token",
        description: "GitLab token (glpat-, gldt-, glrt-, glptt-, glft-, glsoat-, gloas- and 20+ characters)",
        prefilter: r"gl(?:pat|dt|rt|ptt|ft|soat|oas)-",
        pattern: r"(?-u:\b)(?P<s>gl(?:pat|dt|rt|ptt|ft|soat|oas)-[A-Za-z0-9_-]{20,255}(?:\.[A-Za-z0-9_-]+)*)",
        locate: vendor_token,
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
        description: "Stripe live secret or restricted key (sk_live_..., rk_live_...) or webhook signing secret (whsec_...)",
        prefilter: r"k_(?:live|prod)_|whsec_",
        pattern: concat!(
            r"(?-u:\b)(?P<s>[sr]k_(?:live|prod)_[0-9A-Za-z]{10,247}",
            r"|whsec_[A-Za-z0-9+/]{32,100}={0,2})(?:[^0-9A-Za-z+/=]|$)",
        ),
        locate: vendor_token,
    },
    Spec {
        kind: "google_api_key",
        description: "Google API key (AIza and 35 characters)",
        prefilter: r"AIza",
        pattern: r"(?-u:\b)(?P<s>AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
        locate: vendor_token,
    },
    vendor(
        "google_oauth_token",
        "Google OAuth client secret (GOCSPX-...) or access token (ya29. ...)",
        r"GOCSPX-|ya29\.",
        r"(?-u:\b)(?P<s>GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[A-Za-z0-9_-]{20,})(?:[^A-Za-z0-9_-]|$)",
    ),
    vendor(
        "sendgrid_api_key",
        "SendGrid API key (SG. and two dot-separated parts)",
        r"SG\.",
        r"(?-u:\b)(?P<s>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
    ),
    vendor(
        "twilio_api_key",
        "Twilio API key (SK and 32 hex digits)",
        r"SK[0-9a-fA-F]{8}",
        r"(?-u:\b)(?P<s>SK[0-9a-fA-F]{32})(?-u:\b)",
    ),
    vendor(
        "npm_token",
        "npm access token (npm_ and 36 characters)",
        r"npm_",
        r"(?-u:\b)(?P<s>npm_[A-Za-z0-9]{36})(?-u:\b)",
    ),
    vendor(
        "pypi_token",
        "PyPI or TestPyPI API token (pypi-AgE...)",
        r"pypi-AgE",
        r"(?-u:\b)(?P<s>pypi-AgE[A-Za-z0-9_-]{50,})",
    ),
    vendor(
        "dockerhub_token",
        "Docker Hub personal or organisation access token (dckr_pat_..., dckr_oat_...)",
        r"dckr_(?:pat|oat)_",
        r"(?-u:\b)(?P<s>dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,})(?:[^A-Za-z0-9_-]|$)",
    ),
    Spec {
        kind: "huggingface_token",
        description: "Hugging Face access token (hf_ and 34 mixed-case characters)",
        prefilter: r"hf_",
        pattern: r"(?-u:\b)(?P<s>hf_(?P<b>[A-Za-z0-9]{34}))(?-u:\b)",
        locate: mixed_case,
    },
    vendor(
        "groq_api_key",
        "Groq API key (gsk_ and 52 characters)",
        r"gsk_",
        r"(?-u:\b)(?P<s>gsk_[A-Za-z0-9]{52})(?-u:\b)",
    ),
    vendor(
        "replicate_token",
        "Replicate API token (r8_ and 37 characters)",
        r"r8_",
        r"(?-u:\b)(?P<s>r8_[A-Za-z0-9]{37})(?-u:\b)",
    ),
    vendor(
        "perplexity_api_key",
        "Perplexity API key (pplx- and 48 characters)",
        r"pplx-",
        r"(?-u:\b)(?P<s>pplx-[A-Za-z0-9]{48})(?-u:\b)",
    ),
    vendor(
        "xai_api_key",
        "xAI API key (xai- and 80 characters)",
        r"xai-",
        r"(?-u:\b)(?P<s>xai-[A-Za-z0-9]{80})(?-u:\b)",
    ),
    vendor(
        "langsmith_api_key",
        "LangSmith API key (lsv2_pt_... or lsv2_sk_...)",
        r"lsv2_",
        r"(?-u:\b)(?P<s>lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})(?-u:\b)",
    ),
    vendor(
        "shopify_token",
        "Shopify access token or shared secret (shpat_, shpca_, shppa_, shpss_ and 32 hex digits)",
        r"shp(?:at|ca|pa|ss)_",
        r"(?-u:\b)(?P<s>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})(?-u:\b)",
    ),
    vendor(
        "digitalocean_token",
        "DigitalOcean token (dop_v1_, doo_v1_, dor_v1_ and 64 hex digits)",
        r"do[opr]_v1_",
        r"(?-u:\b)(?P<s>do[opr]_v1_[a-f0-9]{64})(?-u:\b)",
    ),
    vendor(
        "mailchimp_api_key",
        "Mailchimp API key (32 hex digits and a -usN data-centre suffix)",
        r"-us[0-9]",
        r"(?-u:\b)(?P<s>[0-9a-f]{32}-us[0-9]{1,2})(?-u:\b)",
    ),
    vendor(
        "databricks_token",
        "Databricks personal access token (dapi and 32 hex digits)",
        r"dapi[0-9a-f]",
        r"(?-u:\b)(?P<s>dapi[a-f0-9]{32}(?:-[0-9])?)(?-u:\b)",
    ),
    vendor(
        "postman_api_key",
        "Postman API key (PMAK-...)",
        r"PMAK-",
        r"(?-u:\b)(?P<s>PMAK-[a-f0-9]{24}-[a-f0-9]{34})(?-u:\b)",
    ),
    vendor(
        "grafana_token",
        "Grafana Cloud token (glc_...) or service-account token (glsa_...)",
        r"gl(?:c|sa)_",
        r"(?-u:\b)(?P<s>glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})(?:[^A-Za-z0-9+/=_]|$)",
    ),
    vendor(
        "newrelic_key",
        "New Relic user API key (NRAK- and 27 characters)",
        r"NRAK-",
        r"(?-u:\b)(?P<s>NRAK-[A-Z0-9]{27})(?-u:\b)",
    ),
    vendor(
        "sentry_token",
        "Sentry organisation or user auth token (sntrys_..., sntryu_...)",
        r"sntry[su]_",
        r"(?-u:\b)(?P<s>sntrys_[A-Za-z0-9+/=_-]{60,}|sntryu_[a-f0-9]{64})",
    ),
    vendor(
        "vault_token",
        "HashiCorp Vault service or batch token (hvs., hvb.)",
        r"hv[sb]\.",
        r"(?-u:\b)(?P<s>hv[sb]\.[A-Za-z0-9_-]{24,})",
    ),
    vendor(
        "terraform_token",
        "Terraform Cloud / HCP Terraform API token (....atlasv1....)",
        r"\.atlasv1\.",
        r"(?-u:\b)(?P<s>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,})",
    ),
    vendor(
        "doppler_token",
        "Doppler token (dp.pt., dp.st., dp.sa., dp.ct., dp.scim., dp.audit.)",
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.",
        r"(?-u:\b)(?P<s>dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44})(?-u:\b)",
    ),
    vendor(
        "pulumi_token",
        "Pulumi access token (pul- and 40 hex digits)",
        r"pul-",
        r"(?-u:\b)(?P<s>pul-[a-f0-9]{40})(?-u:\b)",
    ),
    vendor(
        "supabase_token",
        "Supabase personal access token (sbp_ and 40 hex digits)",
        r"sbp_",
        r"(?-u:\b)(?P<s>sbp_[a-f0-9]{40})(?-u:\b)",
    ),
    vendor(
        "age_secret_key",
        "age encryption secret key (AGE-SECRET-KEY-1...)",
        r"AGE-SECRET-KEY-1",
        r"(?P<s>AGE-SECRET-KEY-1[0-9A-Z]{58})(?-u:\b)",
    ),
    vendor(
        "azure_ad_client_secret",
        "Microsoft Entra ID (Azure AD) client secret (...Q~...)",
        r"[0-9]Q~",
        r"(?:^|[^A-Za-z0-9_~.-])(?P<s>[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)",
    ),
    vendor(
        "mapbox_token",
        "Mapbox secret access token (sk.eyJ...)",
        r"sk\.eyJ",
        r"(?-u:\b)(?P<s>sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,})",
    ),
    vendor(
        "square_token",
        "Square access token or OAuth secret (sq0atp-, sq0csp-)",
        r"sq0(?:atp|csp)-",
        r"(?-u:\b)(?P<s>sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43})(?:[^0-9A-Za-z_-]|$)",
    ),
    vendor(
        "linear_api_key",
        "Linear API key (lin_api_ and 40 characters)",
        r"lin_api_",
        r"(?-u:\b)(?P<s>lin_api_[A-Za-z0-9]{40})(?-u:\b)",
    ),
    vendor(
        "atlassian_api_token",
        "Atlassian API token (ATATT3...)",
        r"ATATT3",
        r"(?-u:\b)(?P<s>ATATT3[A-Za-z0-9_=-]{150,})",
    ),
    vendor(
        "telegram_bot_token",
        "Telegram bot token (bot id, a colon, AA and 33 characters), also inside an API URL",
        r":AA",
        r"(?:^|[^0-9A-Za-z])(?:bot)?(?P<s>[0-9]{8,10}:AA[A-Za-z0-9_-]{33})(?:[^A-Za-z0-9_-]|$)",
    ),
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
            r"(?:(?P<scheme>(?i-u:bearer|basic|token|bot|apikey|api-key|sso-key|key|digest))[ \t]+)?",
            r"(?P<s>[A-Za-z0-9._~+/:=-]{8,})",
            r"|(?:^|[^A-Za-z0-9_])(?:Bearer|bearer|BEARER)[ \t]+(?P<b>[A-Za-z0-9._~+/-]{20,}=*)",
        ),
        locate: authorization,
    },
    Spec {
        kind: "cli_password",
        description: "a password on a command line: curl/httpie -u user:PASS, mysql -pPASS, redis-cli -a PASS, sshpass -p PASS",
        prefilter: r"(?:curl|https?|xh|wget)[ \t]|mysql|mariadb|redis-cli|sshpass",
        pattern: concat!(
            // The command, then (lazily, across `\` line continuations) other arguments.
            r"(?:^|[^A-Za-z0-9_./:-])(?:curl|https?|xh|wget)[ \t](?:(?:[^\n]|\\\r?\n)*?[ \t])?",
            r#"(?:-u|--user|-U|--proxy-user|-a|--auth)(?:[ \t]+|=)["']?[^\s:"'$<{]*:(?P<s>[^\s"'@]+)"#,
            r"|(?:^|[^A-Za-z0-9_./-])(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)[ \t]",
            r#"(?:(?:[^\n]|\\\r?\n)*?[ \t])?-p(?P<m>[^\s'"-][^\s'"]*|'[^'\s]+'|"[^"\s]+")"#,
            r"|(?:^|[^A-Za-z0-9_./-])redis-cli[ \t](?:(?:[^\n]|\\\r?\n)*?[ \t])?-a[ \t]+",
            r#"(?P<r>[^\s'"-][^\s'"]*|'[^'\s]+'|"[^"\s]+")"#,
            r#"|(?:^|[^A-Za-z0-9_./-])sshpass[ \t]+-p[ \t]*(?P<p>[^\s'"-][^\s'"]*|'[^'\s]+'|"[^"\s]+")"#,
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
            r"(?i-u:api[_-]?key|apikey|access[_-]?token|token|secret|key|password)s?/",
            r#"(?P<p>[A-Za-z0-9_-]{16,})(?:[/?#\s"'<>)]|$)"#,
            r"|://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%+=:@!$,;-]*)*\?",
            r"(?:[A-Za-z0-9._~%+=:@!$,;/-]*&)*",
            r"(?i-u:x-amz-signature|x-goog-signature|signature|sig|hmac|key)=(?P<q>[A-Za-z0-9%_.-]{16,})",
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
        description: "the password field of a PostgreSQL .pgpass line (host:port:database:user:password)",
        // A whole line of five fields from its start: a port between colons alone is in every
        // time of day.
        prefilter: r"(?m)^[ \t]*(?:[^\s:]+|\[[0-9A-Fa-f:.]+\]):(?:[0-9]{1,5}|\*):[^\s:]+:[^\s:]+:[^\s:]",
        pattern: concat!(
            r"(?m)^[ \t]*(?P<h>[A-Za-z0-9_.*-]+|\[[0-9A-Fa-f:.]+\]):(?:[0-9]{1,5}|\*):",
            r"(?:[^:\s\\]|\\.)+:(?P<u>(?:[^:\s\\]|\\.)+):(?P<s>(?:[^:\s\\]|\\.)+)[ \t]*\r?$",
        ),
        locate: pgpass,
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
            r"|<name>[ \t]*(?P<hn>[^<>\s]+)[ \t]*</name>\s*<value>(?P<hv>[^<>\s]+)</value>",
        ),
        locate: xml_secret,
    },
    Spec {
        kind: "xml_secret",
        description: "the value of an XML element whose name or key attribute is secret-named",
        // The attribute and its secret word, as the name must hold one: a secret word alone
        // would run this rule over every text that mentions a key beside a generic type.
        prefilter: concat!(
            r#"(?i-u:name|key)[ \t]*=[ \t]*"[^"<>]*(?i-u:"#,
            secret_word!(),
            ")"
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
        description: "a password passed as a string literal: define('DB_PASSWORD', '...'), new NetworkCredential(user, \"...\"), PasswordAuthentication, HTTPBasicAuth, SetBasicAuth, getConnection(url, user, \"...\")",
        prefilter: r"define[ \t]*\(|Credential|PasswordAuthentication|BasicAuth|DigestAuth|PlainAuth|(?i-u:basic_?auth)|login[ \t]*\(|auth[ \t]*=?[ \t]*\(|getConnection",
        pattern: concat!(
            // `define('DB_PASSWORD', '…')`: the constant's name says what the value is.
            r#"define[ \t]*\([ \t]*["'](?P<k>[A-Za-z0-9_]+)["'][ \t]*,[ \t]*["'](?P<dv>[^"'\\\r\n]*)["'][ \t]*\)"#,
            // Calls whose second argument is the password (the user comes first).
            r"|(?-u:\b)(?:NetworkCredential|PasswordAuthentication|UsernamePasswordCredentials",
            r"|UsernamePasswordAuthenticationToken|PasswordCredential|HTTPBasicAuth|HTTPDigestAuth",
            r"|HttpBasicAuth|BasicAuth|DigestAuth|SetBasicAuth|basicAuth|basic_auth|login|auth",
            // OkHttp's `Credentials.basic(user, "…")`.
            r"|Credentials\.basic",
            // `requests.get(url, auth=("user", "…"))`
            r"|auth[ \t]*=)[ \t]*\([ \t]*",
            // The password may be wrapped as reqwest's `.basic_auth(user, Some("…"))` wraps it.
            r#"(?:"[^"\r\n]*"|'[^'\r\n]*'|[A-Za-z_$][A-Za-z0-9_.$]*)[ \t]*,[ \t]*(?:Some\([ \t]*)?[rbu]?["'](?P<cv>[^"'\\\s]*)["']"#,
            // Go's `smtp.PlainAuth(identity, user, password, host)`.
            r#"|PlainAuth[ \t]*\([ \t]*"[^"\r\n]*"[ \t]*,[ \t]*(?:"[^"\r\n]*"|[A-Za-z_][A-Za-z0-9_.]*)[ \t]*,[ \t]*"(?P<gv>[^"\\\s]*)""#,
            // JDBC's `getConnection(url, user, password)`.
            r#"|getConnection[ \t]*\([ \t]*(?:"[^"\r\n]*"|[A-Za-z_][A-Za-z0-9_.]*)[ \t]*,[ \t]*"#,
            r#"(?:"[^"\r\n]*"|[A-Za-z_][A-Za-z0-9_.]*)[ \t]*,[ \t]*"(?P<jv>[^"\\\s]*)""#,
        ),
        locate: code_credential,
    },
    Spec {
        kind: "code_credential",
        description: "a password literal given to a setter or builder method (setPassword(\"...\"), withPassword(\"...\"), .password(\"...\"))",
        // From the secret word on: an unanchored `set`/`with`/`.` prefix would start a
        // thread of the prefilter's automaton at every method call.
        prefilter: r"(?i-u)(?:pass|pwd|secret|token|api_?key|access_?key)[A-Za-z0-9]*[ \t]*\([ \t]*[\x22']",
        pattern: concat!(
            // The method's name holds a secret word; the search starts from that literal.
            r#"(?P<dot>\.)?(?-u:\b)(?P<m>(?:[A-Za-z][A-Za-z0-9]*?)?"#,
            r#"(?i-u:pass|pwd|secret|token|api_?key|access_?key)[A-Za-z0-9]*)[ \t]*\([ \t]*"#,
            r#"["'](?P<v>[^"'\\\s]*)["'][ \t]*\)"#,
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
        prefilter: secret_word_prefilter!(),
        pattern: concat!(
            r"(?P<k>[A-Za-z0-9_.-]*?(?i-u:",
            secret_word!(),
            r")(?i-u:[_.-]?(?:key|value))?)",
            // A typed declaration (`password: str = "…"`, `static TOKEN: &str = "…"`) comes
            // first: with a plain `:` the type would be read as the value.
            r#"(?:\\?["']\]?)?(?P<sep>[ \t]*:[ \t]*(?P<ty>(?:&(?:'static[ \t]+)?)?[A-Za-z_][A-Za-z0-9_.]*(?:\[[A-Za-z0-9_., \[\]]*\])?\??)[ \t]*=[ \t]*"#,
            r"|[ \t]*(?:=>|:=|==|::|=|:)[ \t]*)",
            r#"(?:[rbfuRBFU]{0,2}\\?["'`](?P<qv>[^"'`\s\\]*)\\?["'`]"#,
            r#"|(?P<bv>[^\s"'`,;&=:|*!#@(\[{<][^\s"'`,;&]*))"#,
        ),
        locate: assignment,
    },
    Spec {
        kind: "password_assignment",
        description: "the value of a name/value pair with a secret-named name (Kubernetes and ECS env entries)",
        // The secret-named name, its separator and the `value` key that follows it.
        prefilter: concat!(
            r#"(?i-u)(?:pass|pwd|secret|token|key)[A-Za-z0-9_.-]*["']?[ \t]*(?:,|\r?\n)"#,
            r#"[ \t]*["']?value["']?[ \t]*[:=]"#,
        ),
        pattern: concat!(
            r#"["']?(?i-u:name|key)["']?[ \t]*[:=][ \t]*["']?(?P<k>[A-Za-z0-9_.-]+)["']?[ \t]*"#,
            // The value on the same line (`{"name": …, "value": …}`) or the next (YAML).
            r#"(?:,[ \t]*|\r?\n[ \t]*)["']?(?i-u:value)["']?[ \t]*[:=][ \t]*"#,
            r#"(?:"(?P<qv>[^"\r\n]*)"|'(?P<sv>[^'\r\n]*)'|(?P<bv>[^\s"'#,}][^\s,}]*))"#,
        ),
        locate: name_value,
    },
    Spec {
        kind: "password_assignment",
        description: "a quoted passphrase with spaces assigned to an upper-case password or secret name in an env file",
        prefilter: r#"(?:PASS|PWD|SECRET)[A-Z0-9_]*=["']"#,
        pattern: concat!(
            r"(?m)^[ \t]*(?:export[ \t]+)?(?P<k>[A-Z][A-Z0-9_]*)=",
            r#"(?:"(?P<qv>[^"\r\n\\]* [^"\r\n\\]*)"|'(?P<sv>[^'\r\n\\]* [^'\r\n\\]*)')"#,
            r"[ \t]*(?:#[^\r\n]*)?\r?$",
        ),
        locate: passphrase,
    },
    Spec {
        kind: "high_entropy_key",
        description: "a random-looking value assigned to a key, salt or credentials name (secret_key_base, APP_KEY=base64:..., FERNET_KEY, signing keys)",
        prefilter: r"(?i-u)key|salt|pepper|hmac|credential|auth",
        pattern: concat!(
            r"(?P<k>[A-Za-z0-9_.-]*?(?P<w>(?i-u:key[_.-]?base|keys|key|salt|pepper|hmac|credentials?|auth)))",
            r#"(?:\\?["']\]?)?(?P<sep>[ \t]*(?:=>|:=|=|:)[ \t]*)"#,
            // Random-looking values are 20 characters or longer; shorter ones never match.
            r#"(?:[rbfuRBFU]{0,2}\\?["'`](?P<qv>[^"'`\s\\]{20,})\\?["'`]|(?P<bv>[A-Za-z0-9+/=_:.-]{20,}))"#,
        ),
        locate: high_entropy_key,
    },
];

/// The compiled rule set.
///
/// Build it once ([`Masker::new`] compiles some sixty expressions) and share it: masking takes
/// `&self`, the type is `Send + Sync`, and cloning it is cheap.
#[derive(Clone, Debug)]
pub struct Masker {
    rules: Vec<Rule>,
    /// Pattern `i` is the required literal of `rules[i]`.
    prefilter: Arc<Prefilter>,
}

/// Makes a search cache for the prefilter's DFA.
type NewCache = Box<dyn Fn() -> Cache + Send + Sync + UnwindSafe + RefUnwindSafe>;

/// The rules' required literals as one forward lazy DFA that reports every pattern occurring
/// anywhere in a text, in one pass. Only which patterns occur is asked, never where, so a
/// general regular expression set (which would also compile the patterns reversed and extract
/// their literals, most of the cost of building one, paid by every process that masks) is not
/// needed.
#[derive(Debug)]
struct Prefilter {
    dfa: DFA,
    /// Search caches, one per thread searching at a time (what a lazy DFA has built so far).
    caches: Pool<Cache, NewCache>,
}

impl Prefilter {
    fn new<'p>(patterns: impl IntoIterator<Item = &'p str>) -> Prefilter {
        let patterns: Vec<&str> = patterns.into_iter().collect();
        let dfa = DFA::builder()
            .configure(DFA::config().match_kind(MatchKind::All))
            .build_many(&patterns)
            .expect("mask prefilter patterns are constants covered by tests");
        let for_caches = dfa.clone();
        let new_cache: NewCache = Box::new(move || for_caches.create_cache());
        Prefilter {
            dfa,
            caches: Pool::new(new_cache),
        }
    }

    /// Which patterns occur in `text`. The DFA has no quit bytes (no Unicode word boundary)
    /// and never gives up on its cache, so the search cannot fail; were it to, every pattern
    /// is reported, which runs every rule: slower, never a secret missed.
    fn matches(&self, text: &str) -> PatternSet {
        let mut set = PatternSet::new(self.dfa.pattern_len());
        let mut cache = self.caches.get();
        if self
            .dfa
            .try_which_overlapping_matches(&mut cache, &Input::new(text), &mut set)
            .is_err()
        {
            for index in 0..self.dfa.pattern_len() {
                set.insert(regex_automata::PatternID::must(index));
            }
        }
        set
    }
}

impl Masker {
    /// Compiles the rule set. It never fails: the rules are constants, checked by the tests.
    pub fn new() -> Masker {
        let rules = SPECS
            .iter()
            .map(|spec| Rule {
                kind: spec.kind,
                description: spec.description,
                pattern: spec.pattern,
                regex: OnceLock::new(),
                locate: spec.locate,
                marker: format!("{MARKER_PREFIX}{}]", spec.kind),
            })
            .collect();
        let prefilter = Arc::new(Prefilter::new(SPECS.iter().map(|spec| spec.prefilter)));
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
            let rule = &self.rules[index.as_usize()];
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

/// The range of a capture group.
fn span(m: regex::Match<'_>) -> (usize, usize) {
    (m.start(), m.end())
}

/// The `s` group is the secret.
fn group_s(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    caps.name("s").map(span)
}

/// A vendor token in the `s` group, unless it is an obvious stand-in (`ghp_xxxx…`,
/// `T00000000/B00000000/XXXXXXXX`, `sk_live_your_key_here`).
fn vendor_token(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    (!is_stand_in(m.as_str())).then(|| span(m))
}

/// The first of the `s`, `t` and `u` groups that matched, as a vendor token.
fn either_vendor_group(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps
        .name("s")
        .or_else(|| caps.name("t"))
        .or_else(|| caps.name("u"))?;
    (!is_stand_in(m.as_str())).then(|| span(m))
}

/// A token-shaped stand-in rather than a token: elided (`xxxx`, `****`, `...`), a hint to the
/// reader (`your`, `replace`, `here`), or a tail of one or two repeated characters.
fn is_stand_in(token: &str) -> bool {
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
fn is_elided(value: &str) -> bool {
    ["xxxx", "XXXX", "****", "•••", "...", "…"]
        .iter()
        .any(|run| value.contains(run))
}

/// Private-key blocks are masked whole; a PuTTY key's private lines and a base64-encoded PEM
/// file only when they hold a private key.
fn private_key(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
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
fn openai(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let body = caps.name("b")?.as_str();
    let mixed = body.bytes().any(|b| b.is_ascii_uppercase())
        && body.bytes().any(|b| b.is_ascii_lowercase())
        && body.bytes().any(|b| b.is_ascii_digit());
    if mixed { vendor_token(caps, hay) } else { None }
}

/// Tokens of random letters mix cases; `hf_all_lower_case_identifier_names` does not.
fn mixed_case(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let body = caps.name("b")?.as_str();
    let mixed = body.bytes().any(|b| b.is_ascii_uppercase())
        && body.bytes().any(|b| b.is_ascii_lowercase());
    if mixed { vendor_token(caps, hay) } else { None }
}

/// Slack tokens carry numeric workspace and user ids; `xoxb-your-bot-token` does not.
fn slack(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
    let token = caps.name("s")?.as_str();
    if token.bytes().any(|b| b.is_ascii_digit()) {
        vendor_token(caps, hay)
    } else {
        None
    }
}

fn connection_password(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    (!is_placeholder(m.as_str())).then(|| span(m))
}

/// After `Authorization:` with a scheme, a generated-looking value; without a scheme (a raw key
/// as the header value) or after a bare `Bearer`, one that also mixes letters and digits, so
/// that `authorization: disabled` and "bearer authentication" stay.
fn authorization(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
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
fn cli_password(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = ["s", "m", "r", "p"]
        .iter()
        .find_map(|name| caps.name(name))?;
    let (start, end) = unquote(m.as_str(), m.start());
    let value = &m.as_str()[start - m.start()..end - m.start()];
    // `curl -u user:api_token`: the name of what goes there.
    let named = is_credential_name(value);
    (!value.is_empty() && !is_placeholder(value) && !named).then_some((start, end))
}

/// Whether base64 `value` decodes to `user:password` with a placeholder password.
fn decodes_to_placeholder_password(value: &str) -> bool {
    decode_base64(value)
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| {
            text.split_once(':')
                .map(|(_, password)| is_placeholder(password))
        })
        .unwrap_or(false)
}

/// The range inside one pair of matching quotes, or the whole value.
fn unquote(value: &str, offset: usize) -> (usize, usize) {
    let quoted = value.len() >= 2
        && ((value.starts_with('"') && value.ends_with('"'))
            || (value.starts_with('\'') && value.ends_with('\'')));
    if quoted {
        (offset + 1, offset + value.len() - 1)
    } else {
        (offset, offset + value.len())
    }
}

/// Docker and npm keep `base64(user:password)`; anything else under `"auth"` (`"oauth2"`,
/// `"basic"`) is a setting.
fn registry_auth(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
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
fn url_credential(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
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
    let generated = value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && looks_generated(value)
        && !is_word_list(value)
        && !is_uuid(value);
    (generated && !is_placeholder(value) && !is_stand_in(value)).then(|| span(m))
}

/// The `.netrc` password, without quotes.
fn netrc(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let (start, end) = unquote(m.as_str(), m.start());
    let value = &m.as_str()[start - m.start()..end - m.start()];
    (!value.is_empty() && !is_placeholder(value)).then_some((start, end))
}

/// XML element text, `<add key="…" value="…"/>` and `<name>…</name><value>…</value>`: the
/// name must be secret-named (the element must also close with the same name), and the value
/// must pass the same checks as a quoted assignment.
fn xml_secret(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
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
        } else {
            (caps.name("hn")?.as_str(), caps.name("hv")?)
        };
    let human = secret_name(name)?;
    let v = value.as_str();
    (literal_is_secret(v) && (human || looks_generated(v))).then(|| span(value))
}

/// The lines of a YAML block scalar under a secret-named key: from the first content line to
/// the last line indented at least as deep as it.
fn yaml_block(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
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
fn dockerfile(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let human = secret_name(caps.name("k")?.as_str())?;
    let m = caps.name("s")?;
    let (start, end) = unquote(m.as_str(), m.start());
    let value = &m.as_str()[start - m.start()..end - m.start()];
    (literal_is_secret(value) && (human || looks_generated(value))).then_some((start, end))
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
    let plausible =
        |v: &str| literal_is_secret(v) && (human || (looks_generated(v) && !is_word_list(v)));
    if is_search_only_key(key, hay, start) {
        return None;
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
    // `password: Option<String> = None`: after a type, only a string literal is data.
    if caps.name("ty").is_some() {
        return None;
    }
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
    Some(span(bare))
}

/// A password as a call argument or a `define`d constant: at least four characters (people
/// choose short ones), no whitespace, not a placeholder or a credential's name.
fn code_credential(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    if let Some(k) = caps.name("k") {
        // `define('DB_PASSWORD', …)`, `define('API_TOKEN', …)`; keys and salts have their own rule.
        let human = secret_name(k.as_str())?;
        let m = caps.name("dv")?;
        let v = m.as_str();
        return (literal_is_secret(v) && (human || looks_generated(v))).then(|| span(m));
    }
    let m = caps
        .name("cv")
        .or_else(|| caps.name("jv"))
        .or_else(|| caps.name("gv"))?;
    let v = m.as_str();
    let ok = v.chars().count() >= 4
        && !v.chars().any(char::is_whitespace)
        && !is_placeholder(v)
        && !is_credential_name(v);
    ok.then(|| span(m))
}

/// Builder methods named after the credential itself (`.password("…")`, `.clientSecret("…")`).
const BUILDER_CREDENTIALS: &[&str] = &[
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
fn setter_credential(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
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
    (literal_is_secret(v) && (human || (looks_generated(v) && !is_word_list(v)))).then(|| span(m))
}

/// `define('AUTH_KEY', '…')`: WordPress's keys and salts are random printable strings, which
/// may hold spaces.
fn defined_key(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("v")?;
    let v = m.as_str();
    (!is_placeholder(v) && (looks_random(v) || looks_random_printable(v, true))).then(|| span(m))
}

/// `- name: DB_PASSWORD` / `value: …`: judged like the value of an assignment to the name.
fn name_value(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let human = secret_name(caps.name("k")?.as_str())?;
    let m = caps
        .name("qv")
        .or_else(|| caps.name("sv"))
        .or_else(|| caps.name("bv"))?;
    let v = m.as_str();
    if caps.name("bv").is_some() && looks_like_code(v) {
        return None;
    }
    (literal_is_secret(v) && (human || (looks_generated(v) && !is_word_list(v)))).then(|| span(m))
}

/// Words that make a quoted string with spaces a message or a prompt, not a passphrase.
const MESSAGE_WORDS: &[&str] = &[
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
fn passphrase(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    if secret_name(caps.name("k")?.as_str()) != Some(true) {
        return None;
    }
    let m = caps.name("qv").or_else(|| caps.name("sv"))?;
    let v = m.as_str();
    let words: Vec<&str> = v.split_whitespace().collect();
    let message = words.iter().any(|w| {
        let w = w
            .trim_matches(|c: char| c.is_ascii_punctuation())
            .to_ascii_lowercase();
        MESSAGE_WORDS.contains(&w.as_str())
    });
    let ok = (2..=12).contains(&words.len())
        && v.trim().chars().count() >= 8
        && !message
        && !v.trim_end().ends_with(['.', ':', '?', '!', ','])
        && !v.contains(['%', '{', '}', '$', '<', '>'])
        && !is_placeholder(v.trim())
        && !is_placeholder(&words.join("_"));
    ok.then(|| span(m))
}

/// A `.pgpass` line: the host is a name, an address or `*` (not a number, as in a MAC address
/// or a time), the user is a name, and the password is not a placeholder.
fn pgpass(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
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

/// A Composer `auth.json` token: generated, not a placeholder.
fn registry_token(caps: &Captures<'_>, _: &str) -> Option<(usize, usize)> {
    let m = caps.name("s")?;
    let v = m.as_str();
    (literal_is_secret(v) && looks_generated(v) && !is_word_list(v)).then(|| span(m))
}

/// An Algolia search-only key in a DocSearch-style configuration (`apiKey` beside `appId` and
/// `indexName`, as VitePress and Docusaurus sites publish it): public by design, it ships in
/// the site's pages.
fn is_search_only_key(key: &str, hay: &str, at: usize) -> bool {
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
const NOT_SECRET_KEY_WORDS: &[&str] = &[
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
fn high_entropy_key(caps: &Captures<'_>, hay: &str) -> Option<(usize, usize)> {
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
fn is_random_list(value: &str) -> bool {
    value.contains(',') && value.split(',').all(looks_random)
}

/// Random printable ASCII, as WordPress salts and generated encryption keys are
/// (`3Xr#h|kD~:l+_y@…`): long, from upper case, lower case, digits and punctuation (three of
/// the four, with several punctuation characters), high entropy, and neither words nor a
/// template. Spaces are allowed where the generator uses them (`allow_space`).
fn looks_random_printable(value: &str, allow_space: bool) -> bool {
    let len = value.chars().count();
    let spaces = value.bytes().filter(|&b| b == b' ').count();
    if len < 32
        || !value.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
        || (spaces > 0 && (!allow_space || spaces * 8 > len))
        || value.contains('\\')
        || value.contains("://")
        || is_placeholder(value)
        || is_camel_words(value)
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
fn is_word_start(before: &str, word: &str) -> bool {
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
fn looks_random(value: &str) -> bool {
    if let Some(rest) = value.strip_prefix("base64:") {
        return rest.len() >= 32 && rest.bytes().all(is_base64_byte);
    }
    if value.len() < 20 || !value.bytes().all(is_base64_byte) || is_word_list(value) {
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

/// Mostly runs of four or more lower-case letters (`sqlite3BtreePayloadSize`): identifier
/// words. In random base64 such runs hold about a tenth of the characters.
fn is_camel_words(value: &str) -> bool {
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

fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-')
}

/// Shannon entropy in bits per character.
fn entropy(value: &str) -> f64 {
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
fn is_word_list(value: &str) -> bool {
    value.contains(['_', '-', '.'])
        && value.split(['_', '-', '.']).all(|part| {
            part.bytes().all(|b| b.is_ascii_alphabetic())
                || part.bytes().all(|b| b.is_ascii_digit())
                || (part.len() <= 3 && part.bytes().all(|b| b.is_ascii_alphanumeric()))
        })
}

/// `8-4-4-4-12` hex: an identifier.
fn is_uuid(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Decodes standard or URL-safe base64, padded or not.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
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
fn secret_name(name: &str) -> Option<bool> {
    // Longer words first: `password` must not be read as `pass` and a `word` suffix.
    const WORDS: &[&str] = &[
        "passwd",
        "password",
        "passphrase",
        "pass",
        "pwd",
        "secret",
        "token",
        "apikey",
        "accesskey",
        "privatekey",
    ];
    let name = name.trim_matches(['"', '\'']);
    let lower = name.to_ascii_lowercase();
    let human = ["pass", "pwd", "secret"].iter().any(|w| lower.contains(w));
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
        if *word == "pass" {
            // `DB_PASS`, `SMTP_PASS` (environment variables) and `--pass`: a password. In
            // code, `render_pass`, `first_pass` and `bypass` are passes over something.
            let Some(at) = stem.strip_suffix("pass").map(str::len) else {
                continue;
            };
            let before = name[..at].trim_start_matches('-');
            let env_var = !name.bytes().any(|b| b.is_ascii_lowercase())
                && before.chars().next_back().is_none_or(|c| c == '_');
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

/// Words that, before `_pass`, make it a password (`ansible_ssh_pass`, `db_pass`).
const PASS_OWNERS: &[&str] = &[
    "ssh", "become", "sudo", "su", "db", "smtp", "mail", "admin", "root", "user", "login", "vault",
    "ldap", "ftp", "sftp", "redis", "mysql", "pg", "proxy", "bind", "auth", "winrm",
];

/// Credential-shaped: eight or more characters mixing letters and digits, not words joined by
/// separators, and not a dotted number (an OID or a version) or a braced GUID.
fn looks_credential_shaped(value: &str) -> bool {
    value.chars().count() >= 8
        && value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && !is_word_list(value)
        && !value.contains(['{', '}'])
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
const REFERENCE_PREFIXES: &[&str] = &[
    "arn:",
    "vault:",
    "ref+",
    "secretsmanager:",
    "ssm:",
    "sops:",
    "keyvault:",
    "env:",
    "file:",
];

/// A reference, template, placeholder word or marker: something that is not itself a secret.
fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.is_empty()
        || value.contains(MARKER_PREFIX)
        || is_variable_reference(value)
        || (value.starts_with('<') && value.ends_with('>'))
        || (value.starts_with('{') && value.ends_with('}') && !is_braced_ciphertext(value))
        || (value.len() > 2 && value.starts_with('%') && value.ends_with('%'))
        || (value.len() > 2 && value.starts_with('@') && value.ends_with('@'))
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
        || lower.contains("replace_me")
        || lower.contains("replace-me")
        || lower.contains("replaceme")
        || lower.ends_with("_here")
        || lower.ends_with("-here")
        || REFERENCE_PREFIXES.iter().any(|p| lower.starts_with(p))
        || (lower.starts_with("projects/") && lower.contains("/secrets/"))
}

/// `{COQLCE6DU6GtcS5P=}` (Maven's encrypted `settings.xml` passwords) and Jenkins'
/// `{AQAAABAAAAAQ…}`: base64 ciphertext in braces, not a `{name}` template.
fn is_braced_ciphertext(value: &str) -> bool {
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
fn is_variable_reference(value: &str) -> bool {
    let mut chars = value.chars();
    chars.next() == Some('$')
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '{' | '('))
}

/// Keys that are public by design or work only in a vendor's test mode.
const PUBLIC_OR_TEST_KEY_PREFIXES: &[&str] = &["sk_test_", "rk_test_", "pk_test_", "pk_live_"];

fn is_public_or_test_key(value: &str) -> bool {
    PUBLIC_OR_TEST_KEY_PREFIXES
        .iter()
        .any(|p| value.starts_with(p))
}

/// Checks shared by quoted and bare values.
fn literal_is_secret(value: &str) -> bool {
    value.chars().count() >= 6
        && !value.chars().any(char::is_whitespace)
        && !is_public_or_test_key(value)
        && !is_placeholder(value)
        && !is_credential_name(value)
        && !value.contains("://")
        && !is_path(value)
}

/// `"refresh_token"`, `"X-Api-Key"`, `token=token`: the value names a credential.
fn is_credential_name(value: &str) -> bool {
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
    if value.contains(['(', ')', '[', ']', '{', '}', '<', '>', '|']) || value.contains("::") {
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

    /// The rule set's expressions are pinned to [`MASK_RULES_VERSION`]: stored text records the
    /// version it was masked by, and a pack trusts text stored under the current version not
    /// to need masking again, so changing a rule's kind, prefilter or expression without a new
    /// version would let stores indexed before the change show what the new rule catches.
    /// (A change to a rule's validating code needs the same bump; no digest sees it.)
    #[test]
    fn the_rules_are_the_ones_their_version_names() {
        // FNV-1a over every rule's kind, prefilter and expression, in order: stable across
        // Rust releases, unlike the standard library's hasher.
        let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
        for spec in SPECS {
            for part in [spec.kind, spec.prefilter, spec.pattern] {
                for byte in part.bytes().chain([0]) {
                    digest = (digest ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
                }
            }
        }
        assert_eq!(
            (MASK_RULES_VERSION, digest),
            (3, 0xcdc1_1c4c_bdc3_0cbb),
            "the rules changed: bump MASK_RULES_VERSION, then pin it here with the new digest"
        );
    }

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
        // Rules and widenings of rule-set version 2 (fake values with real shapes).
        (
            "google_oauth_token",
            "GOOGLE_CLIENT_SECRET=GOCSPX-FAKEd55virF5xkPOJqNArkiNanQ1\n",
            Some("GOOGLE_CLIENT_SECRET=[REDACTED:google_oauth_token]\n"),
        ),
        (
            "google_oauth_token",
            "client = connect(key=\"GOCSPX-FAKEd55virF5xkPOJqNArkiNanQ1\")",
            Some("client = connect(key=\"[REDACTED:google_oauth_token]\")"),
        ),
        (
            "google_oauth_token",
            "see GOCSPX-tooShort123 in the docs",
            None,
        ),
        (
            "sendgrid_api_key",
            "SENDGRID_API_KEY=SG.FAKEEsSJj-M5VB4gbxLwW9.FAKEIyonYMWPEA8hiBVP-xP-z2z4rtGGvk3Tk_yBj_t\n",
            Some("SENDGRID_API_KEY=[REDACTED:sendgrid_api_key]\n"),
        ),
        (
            "sendgrid_api_key",
            "client = connect(key=\"SG.FAKEEsSJj-M5VB4gbxLwW9.FAKEIyonYMWPEA8hiBVP-xP-z2z4rtGGvk3Tk_yBj_t\")",
            Some("client = connect(key=\"[REDACTED:sendgrid_api_key]\")"),
        ),
        (
            "sendgrid_api_key",
            "see SG.xxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs",
            None,
        ),
        (
            "twilio_api_key",
            "TWILIO_API_KEY_SID=SKdeadbeeff54a2989d5e52e2a3c6439ed\n",
            Some("TWILIO_API_KEY_SID=[REDACTED:twilio_api_key]\n"),
        ),
        (
            "twilio_api_key",
            "client = connect(key=\"SKdeadbeeff54a2989d5e52e2a3c6439ed\")",
            Some("client = connect(key=\"[REDACTED:twilio_api_key]\")"),
        ),
        (
            "twilio_api_key",
            "see ACdeadbeeffb81df82a1804225f969f1a6 in the docs",
            None,
        ),
        (
            "npm_token",
            "NPM_TOKEN=npm_FAKEeYSbNJBAPohKeZgZEceWAvRMjaf1cxis\n",
            Some("NPM_TOKEN=[REDACTED:npm_token]\n"),
        ),
        (
            "npm_token",
            "client = connect(key=\"npm_FAKEeYSbNJBAPohKeZgZEceWAvRMjaf1cxis\")",
            Some("client = connect(key=\"[REDACTED:npm_token]\")"),
        ),
        (
            "npm_token",
            "see npm_install_dependencies_for_the_workspace in the docs",
            None,
        ),
        (
            "pypi_token",
            "TWINE_PASSWORD=pypi-AgEIcHlwaS5vcmcFAKE16FUikyrspUWIpsvQX25vkP-H9Rp58tva7BS-SdeIn_oJjNnZLwAC651\n",
            Some("TWINE_PASSWORD=[REDACTED:pypi_token]\n"),
        ),
        (
            "pypi_token",
            "client = connect(key=\"pypi-AgEIcHlwaS5vcmcFAKE16FUikyrspUWIpsvQX25vkP-H9Rp58tva7BS-SdeIn_oJjNnZLwAC651\")",
            Some("client = connect(key=\"[REDACTED:pypi_token]\")"),
        ),
        ("pypi_token", "see pypi-AgEshort in the docs", None),
        (
            "dockerhub_token",
            "DOCKERHUB_TOKEN=dckr_pat_FAKE1En8WOXm_wWmEz4SWSTAB2-\n",
            Some("DOCKERHUB_TOKEN=[REDACTED:dockerhub_token]\n"),
        ),
        (
            "dockerhub_token",
            "client = connect(key=\"dckr_pat_FAKE1En8WOXm_wWmEz4SWSTAB2-\")",
            Some("client = connect(key=\"[REDACTED:dockerhub_token]\")"),
        ),
        (
            "dockerhub_token",
            "see dckr_pat_xxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs",
            None,
        ),
        (
            "huggingface_token",
            "HF_TOKEN=hf_FAKEirFlLqLYdoGVyrBjiXRsHpniLVFbwI\n",
            Some("HF_TOKEN=[REDACTED:huggingface_token]\n"),
        ),
        (
            "huggingface_token",
            "client = connect(key=\"hf_FAKEirFlLqLYdoGVyrBjiXRsHpniLVFbwI\")",
            Some("client = connect(key=\"[REDACTED:huggingface_token]\")"),
        ),
        (
            "huggingface_token",
            "see hf_hub_download_and_cache_the_modelx in the docs",
            None,
        ),
        (
            "groq_api_key",
            "GROQ_API_KEY=gsk_FAKEwxEvpIOyWt0yT93Nzih1FH5xDgCaulXZhhIzBIsExu5MRBch\n",
            Some("GROQ_API_KEY=[REDACTED:groq_api_key]\n"),
        ),
        (
            "groq_api_key",
            "client = connect(key=\"gsk_FAKEwxEvpIOyWt0yT93Nzih1FH5xDgCaulXZhhIzBIsExu5MRBch\")",
            Some("client = connect(key=\"[REDACTED:groq_api_key]\")"),
        ),
        (
            "groq_api_key",
            "see gsk_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs",
            None,
        ),
        (
            "replicate_token",
            "REPLICATE_API_TOKEN=r8_FAKElq2i3sSPDrjWuOtTr7loYuVJo9cX7Rbyx\n",
            Some("REPLICATE_API_TOKEN=[REDACTED:replicate_token]\n"),
        ),
        (
            "replicate_token",
            "client = connect(key=\"r8_FAKElq2i3sSPDrjWuOtTr7loYuVJo9cX7Rbyx\")",
            Some("client = connect(key=\"[REDACTED:replicate_token]\")"),
        ),
        ("replicate_token", "see r8_short0123 in the docs", None),
        (
            "perplexity_api_key",
            "PPLX_API_KEY=pplx-FAKEkPtlXsj8dn3puAJKBPtvaXcq4GAW6suAMXqPbUMI2yE9\n",
            Some("PPLX_API_KEY=[REDACTED:perplexity_api_key]\n"),
        ),
        (
            "perplexity_api_key",
            "client = connect(key=\"pplx-FAKEkPtlXsj8dn3puAJKBPtvaXcq4GAW6suAMXqPbUMI2yE9\")",
            Some("client = connect(key=\"[REDACTED:perplexity_api_key]\")"),
        ),
        (
            "perplexity_api_key",
            "see pplx-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX in the docs",
            None,
        ),
        (
            "xai_api_key",
            "XAI_API_KEY=xai-FAKEXtBm6nSqusBdNOJVHMeznqvRwYu4tzQLf1EE8WlSwlP58KMJJYnTBV86S6KzxsmhYOs6SArB1w3o\n",
            Some("XAI_API_KEY=[REDACTED:xai_api_key]\n"),
        ),
        (
            "xai_api_key",
            "client = connect(key=\"xai-FAKEXtBm6nSqusBdNOJVHMeznqvRwYu4tzQLf1EE8WlSwlP58KMJJYnTBV86S6KzxsmhYOs6SArB1w3o\")",
            Some("client = connect(key=\"[REDACTED:xai_api_key]\")"),
        ),
        ("xai_api_key", "see xai-grok-model-name in the docs", None),
        (
            "langsmith_api_key",
            "LANGSMITH_API_KEY=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\n",
            Some("LANGSMITH_API_KEY=[REDACTED:langsmith_api_key]\n"),
        ),
        (
            "langsmith_api_key",
            "client = connect(key=\"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\")",
            Some("client = connect(key=\"[REDACTED:langsmith_api_key]\")"),
        ),
        (
            "langsmith_api_key",
            "see lsv2_pt_deadbeefd236fec6beaf in the docs",
            None,
        ),
        (
            "shopify_token",
            "SHOPIFY_TOKEN=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\n",
            Some("SHOPIFY_TOKEN=[REDACTED:shopify_token]\n"),
        ),
        (
            "shopify_token",
            "client = connect(key=\"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\")",
            Some("client = connect(key=\"[REDACTED:shopify_token]\")"),
        ),
        (
            "shopify_token",
            "see shpat_deadbeef8d287f34 in the docs",
            None,
        ),
        (
            "digitalocean_token",
            "DIGITALOCEAN_TOKEN=dop_v1_deadbeef62ba12e5daeea9213c38f247c45576e85d68272726b12d922e42b6c2\n",
            Some("DIGITALOCEAN_TOKEN=[REDACTED:digitalocean_token]\n"),
        ),
        (
            "digitalocean_token",
            "client = connect(key=\"dop_v1_deadbeef62ba12e5daeea9213c38f247c45576e85d68272726b12d922e42b6c2\")",
            Some("client = connect(key=\"[REDACTED:digitalocean_token]\")"),
        ),
        (
            "digitalocean_token",
            "see dop_v1_deadbeefa3ac3cec24773db77c58e8 in the docs",
            None,
        ),
        (
            "mailchimp_api_key",
            "MAILCHIMP_KEY=deadbeef0645a9c06c4dbfd608736a82-us21\n",
            Some("MAILCHIMP_KEY=[REDACTED:mailchimp_api_key]\n"),
        ),
        (
            "mailchimp_api_key",
            "client = connect(key=\"deadbeef0645a9c06c4dbfd608736a82-us21\")",
            Some("client = connect(key=\"[REDACTED:mailchimp_api_key]\")"),
        ),
        ("mailchimp_api_key", "see region-us21 in the docs", None),
        (
            "databricks_token",
            "DATABRICKS_TOKEN=dapideadbeef194e6f3391fa920a5db423c2\n",
            Some("DATABRICKS_TOKEN=[REDACTED:databricks_token]\n"),
        ),
        (
            "databricks_token",
            "client = connect(key=\"dapideadbeef194e6f3391fa920a5db423c2\")",
            Some("client = connect(key=\"[REDACTED:databricks_token]\")"),
        ),
        (
            "databricks_token",
            "see dapi_client_version in the docs",
            None,
        ),
        (
            "postman_api_key",
            "POSTMAN_API_KEY=PMAK-deadbeefc6420d4b4ea6f665-deadbeef6457288688eed230a426a881d7\n",
            Some("POSTMAN_API_KEY=[REDACTED:postman_api_key]\n"),
        ),
        (
            "postman_api_key",
            "client = connect(key=\"PMAK-deadbeefc6420d4b4ea6f665-deadbeef6457288688eed230a426a881d7\")",
            Some("client = connect(key=\"[REDACTED:postman_api_key]\")"),
        ),
        ("postman_api_key", "see PMAK-deadbeef51 in the docs", None),
        (
            "grafana_token",
            "GRAFANA_TOKEN=glsa_FAKEBbHdtAizNtDaQxO4JoI23gtn2XSW_deadbeef\n",
            Some("GRAFANA_TOKEN=[REDACTED:grafana_token]\n"),
        ),
        (
            "grafana_token",
            "client = connect(key=\"glsa_FAKEBbHdtAizNtDaQxO4JoI23gtn2XSW_deadbeef\")",
            Some("client = connect(key=\"[REDACTED:grafana_token]\")"),
        ),
        ("grafana_token", "see glsa_short_deadbeef in the docs", None),
        (
            "newrelic_key",
            "NEW_RELIC_API_KEY=NRAK-FAKEMV0L89GZ1WBW8M52PD6TD68\n",
            Some("NEW_RELIC_API_KEY=[REDACTED:newrelic_key]\n"),
        ),
        (
            "newrelic_key",
            "client = connect(key=\"NRAK-FAKEMV0L89GZ1WBW8M52PD6TD68\")",
            Some("client = connect(key=\"[REDACTED:newrelic_key]\")"),
        ),
        ("newrelic_key", "see NRAK-SHORT in the docs", None),
        (
            "sentry_token",
            "SENTRY_AUTH_TOKEN=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\n",
            Some("SENTRY_AUTH_TOKEN=[REDACTED:sentry_token]\n"),
        ),
        (
            "sentry_token",
            "client = connect(key=\"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\")",
            Some("client = connect(key=\"[REDACTED:sentry_token]\")"),
        ),
        (
            "sentry_token",
            "see sntryu_deadbeefbe460d786e34 in the docs",
            None,
        ),
        (
            "vault_token",
            "VAULT_TOKEN=hvs.FAKEuNzJ6C4QDbZBtK12fFbYjfSQAyvYZM6uniUw-locKvQqT9sXQ4reoNE4oQWfUGcHmrCaEzUq3LP4lU3GVU51bR\n",
            Some("VAULT_TOKEN=[REDACTED:vault_token]\n"),
        ),
        (
            "vault_token",
            "client = connect(key=\"hvs.FAKEuNzJ6C4QDbZBtK12fFbYjfSQAyvYZM6uniUw-locKvQqT9sXQ4reoNE4oQWfUGcHmrCaEzUq3LP4lU3GVU51bR\")",
            Some("client = connect(key=\"[REDACTED:vault_token]\")"),
        ),
        ("vault_token", "see hvs.short in the docs", None),
        (
            "terraform_token",
            "TF_TOKEN_app_terraform_io=FAKEAAbpu3TyLV.atlasv1.FAKE801KfuajL15lvs-x7oLmc7oYNCnvNx9NeOM1_XBWEjnz9bAfewn4TPBbd4spI0b\n",
            Some("TF_TOKEN_app_terraform_io=[REDACTED:terraform_token]\n"),
        ),
        (
            "terraform_token",
            "client = connect(key=\"FAKEAAbpu3TyLV.atlasv1.FAKE801KfuajL15lvs-x7oLmc7oYNCnvNx9NeOM1_XBWEjnz9bAfewn4TPBbd4spI0b\")",
            Some("client = connect(key=\"[REDACTED:terraform_token]\")"),
        ),
        ("terraform_token", "see x.atlasv1.y in the docs", None),
        (
            "doppler_token",
            "DOPPLER_TOKEN=dp.st.FAKEt8VPot3wD2UoChJZnQFxPLsYqB9wZfwDCEUIyQh\n",
            Some("DOPPLER_TOKEN=[REDACTED:doppler_token]\n"),
        ),
        (
            "doppler_token",
            "client = connect(key=\"dp.st.FAKEt8VPot3wD2UoChJZnQFxPLsYqB9wZfwDCEUIyQh\")",
            Some("client = connect(key=\"[REDACTED:doppler_token]\")"),
        ),
        ("doppler_token", "see dp.st.dev in the docs", None),
        (
            "pulumi_token",
            "PULUMI_ACCESS_TOKEN=pul-deadbeef0c00b0e695a97fb333db700394a428a4\n",
            Some("PULUMI_ACCESS_TOKEN=[REDACTED:pulumi_token]\n"),
        ),
        (
            "pulumi_token",
            "client = connect(key=\"pul-deadbeef0c00b0e695a97fb333db700394a428a4\")",
            Some("client = connect(key=\"[REDACTED:pulumi_token]\")"),
        ),
        ("pulumi_token", "see pul-deadbeef35fe in the docs", None),
        (
            "supabase_token",
            "SUPABASE_ACCESS_TOKEN=sbp_deadbeef8445c5b7a346722fcc34450ff408fe51\n",
            Some("SUPABASE_ACCESS_TOKEN=[REDACTED:supabase_token]\n"),
        ),
        (
            "supabase_token",
            "client = connect(key=\"sbp_deadbeef8445c5b7a346722fcc34450ff408fe51\")",
            Some("client = connect(key=\"[REDACTED:supabase_token]\")"),
        ),
        ("supabase_token", "see sbp_deadbeef1d90 in the docs", None),
        (
            "age_secret_key",
            "SOPS_AGE_KEY=AGE-SECRET-KEY-1FAKE8UHDKL0XLACP0QSPJKKDHY3GNNG8KS89LAX7QLN8MVR66XV42DYJNG\n",
            Some("SOPS_AGE_KEY=[REDACTED:age_secret_key]\n"),
        ),
        (
            "age_secret_key",
            "client = connect(key=\"AGE-SECRET-KEY-1FAKE8UHDKL0XLACP0QSPJKKDHY3GNNG8KS89LAX7QLN8MVR66XV42DYJNG\")",
            Some("client = connect(key=\"[REDACTED:age_secret_key]\")"),
        ),
        (
            "age_secret_key",
            "see AGE-SECRET-KEY-1SHORT in the docs",
            None,
        ),
        (
            "azure_ad_client_secret",
            "AZURE_CLIENT_SECRET=FAK8Q~FAKEjfVpNAp0L1KcBIvC-RC72G3alvrX1N\n",
            Some("AZURE_CLIENT_SECRET=[REDACTED:azure_ad_client_secret]\n"),
        ),
        (
            "azure_ad_client_secret",
            "client = connect(key=\"FAK8Q~FAKEjfVpNAp0L1KcBIvC-RC72G3alvrX1N\")",
            Some("client = connect(key=\"[REDACTED:azure_ad_client_secret]\")"),
        ),
        (
            "azure_ad_client_secret",
            "see abc8Q~short in the docs",
            None,
        ),
        (
            "mapbox_token",
            "MAPBOX_SECRET_TOKEN=sk.eyJ1IjoiZmFrZSIsImEiOiJFAKEs8_YXNYb_UehVh8v.FAKEZTtjUoCzOTVBQnyR6V\n",
            Some("MAPBOX_SECRET_TOKEN=[REDACTED:mapbox_token]\n"),
        ),
        (
            "mapbox_token",
            "client = connect(key=\"sk.eyJ1IjoiZmFrZSIsImEiOiJFAKEs8_YXNYb_UehVh8v.FAKEZTtjUoCzOTVBQnyR6V\")",
            Some("client = connect(key=\"[REDACTED:mapbox_token]\")"),
        ),
        (
            "mapbox_token",
            "see pk.eyJ1IjoiZmFrZSIsImEiOiJFAKEuQSakZ5eQ9rbc_7D.FAKEbYk-GJ3dJKTPEmfAID in the docs",
            None,
        ),
        (
            "square_token",
            "SQUARE_SECRET=sq0csp-FAKEd7Otn3e26OJsScECiUwZvIVmnTMJsqb4tKyUjCC\n",
            Some("SQUARE_SECRET=[REDACTED:square_token]\n"),
        ),
        (
            "square_token",
            "client = connect(key=\"sq0csp-FAKEd7Otn3e26OJsScECiUwZvIVmnTMJsqb4tKyUjCC\")",
            Some("client = connect(key=\"[REDACTED:square_token]\")"),
        ),
        ("square_token", "see sq0atp-short in the docs", None),
        (
            "linear_api_key",
            "LINEAR_API_KEY=lin_api_FAKEDzZUCSiShg31VPoWchOHmGLJMyY5wSDk1S8O\n",
            Some("LINEAR_API_KEY=[REDACTED:linear_api_key]\n"),
        ),
        (
            "linear_api_key",
            "client = connect(key=\"lin_api_FAKEDzZUCSiShg31VPoWchOHmGLJMyY5wSDk1S8O\")",
            Some("client = connect(key=\"[REDACTED:linear_api_key]\")"),
        ),
        (
            "linear_api_key",
            "see lin_api_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs",
            None,
        ),
        (
            "atlassian_api_token",
            "JIRA_API_TOKEN=ATATT3xFfGF0FAKEJSW0gSerCNtpafpjozJwUlOpPWae1CU9SH0DHQToB4GYzgt7talWcmPxVLhUZ9B5-i2i9rn1spJFUVT5xmygXzHeMJgyho3AYRTcaE-rwL2ChSBiYKSFlQT4pNUt7lb0G5fAkORYc5HzL5LYxL07uJubugoaUtgnEUqTIg=DEADBEEF\n",
            Some("JIRA_API_TOKEN=[REDACTED:atlassian_api_token]\n"),
        ),
        (
            "atlassian_api_token",
            "client = connect(key=\"ATATT3xFfGF0FAKEJSW0gSerCNtpafpjozJwUlOpPWae1CU9SH0DHQToB4GYzgt7talWcmPxVLhUZ9B5-i2i9rn1spJFUVT5xmygXzHeMJgyho3AYRTcaE-rwL2ChSBiYKSFlQT4pNUt7lb0G5fAkORYc5HzL5LYxL07uJubugoaUtgnEUqTIg=DEADBEEF\")",
            Some("client = connect(key=\"[REDACTED:atlassian_api_token]\")"),
        ),
        ("atlassian_api_token", "see ATATT3short in the docs", None),
        (
            "telegram_bot_token",
            "TELEGRAM_BOT_TOKEN=1234567890:AAFAKEezi-tTrwiP8WvvCRrPA1vaSY4o5aj\n",
            Some("TELEGRAM_BOT_TOKEN=[REDACTED:telegram_bot_token]\n"),
        ),
        (
            "telegram_bot_token",
            "client = connect(key=\"1234567890:AAFAKEezi-tTrwiP8WvvCRrPA1vaSY4o5aj\")",
            Some("client = connect(key=\"[REDACTED:telegram_bot_token]\")"),
        ),
        (
            "telegram_bot_token",
            "see 12345678:ABFAKEFM7tZCazK5sEn63K5LOVOaylD7Dkc in the docs",
            None,
        ),
        (
            "password_hash",
            "admin:$apr1$FAKEsalt$FAKEoSEjoZZM1YTdNxxARE\n",
            Some("admin:[REDACTED:password_hash]\n"),
        ),
        (
            "password_hash",
            "hash = \"$2b$12$FAKE.UpkF0qMrPiqo2DwbU.4CfgdRi6o5JnDd3uusXyKAPIu/G0zE\"",
            Some("hash = \"[REDACTED:password_hash]\""),
        ),
        (
            "password_hash",
            "root:$6$rounds=5000$FAKEsalt$FAKEe7QOzrVY5zxk/NcZNqMwoIAaHcIGkiBXbApM1Sy2ClcO60UCt2QPtsvzGCiGP/PNwNtEa7FCTyOi2DqGqx:19000:0:99999:7:::",
            Some("root:[REDACTED:password_hash]:19000:0:99999:7:::"),
        ),
        (
            "password_hash",
            "let out = re.replace_all(text, \"$1$2\");\nroot:*:19000:0:99999:7:::",
            None,
        ),
        (
            "webhook_url",
            "url: https://hooks.slack.com/services/T0FAKE01/B0FAKE02/FAKE9F7wdn3esySRitejtezs",
            Some("url: https://hooks.slack.com/services/T0FAKE01/B0FAKE02/[REDACTED:webhook_url]"),
        ),
        (
            "webhook_url",
            "\"https://discord.com/api/webhooks/123456789012345678/FAKElgSRGfg-FN2hYSfHcKsJ9GWQUTduTaArEPaCmfU9SwbHEPxPZH8gShfDOaOOI091\"",
            Some("\"https://discord.com/api/webhooks/123456789012345678/[REDACTED:webhook_url]\""),
        ),
        (
            "webhook_url",
            "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            None,
        ),
        (
            "azure_storage_key",
            "DefaultEndpointsProtocol=https;AccountName=fake;AccountKey=FAKELpLm6o9ovSR60YrugRsoUx20oeYGzwO7DhkPOtukoy5F0y3Q0JyDE2Uh0GNq666kDWOweeLfUus33udtLu==;EndpointSuffix=core.windows.net",
            Some(
                "DefaultEndpointsProtocol=https;AccountName=fake;AccountKey=[REDACTED:azure_storage_key];EndpointSuffix=core.windows.net",
            ),
        ),
        (
            "azure_storage_key",
            "https://fake.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sp=r&sig=FAKEeIMhGoQKqzyKwgNK0Ih6w3yUCD4Rvp17OiiZ%3D",
            Some(
                "https://fake.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sp=r&sig=[REDACTED:azure_storage_key]",
            ),
        ),
        (
            "azure_storage_key",
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;",
            None,
        ),
        (
            "authorization_header",
            "curl -H \"Authorization: Bearer FAKELUiL9kj4zP62Y7QMvxIxVERzI2JJ0CmLBKtf\" https://api.example.com",
            Some(
                "curl -H \"Authorization: Bearer [REDACTED:authorization_header]\" https://api.example.com",
            ),
        ),
        (
            "authorization_header",
            "Authorization: Basic ZmFrZTpGYWtlLVBhc3MtMQ==\n",
            Some("Authorization: Basic [REDACTED:authorization_header]\n"),
        ),
        (
            "authorization_header",
            "sent headers {'auth': 'Bearer FAKEZRzTjboJ9caE13MS1njgT7UNwBdD'}",
            Some("sent headers {'auth': 'Bearer [REDACTED:authorization_header]'}"),
        ),
        (
            "authorization_header",
            "curl -H \"Authorization: Bearer $TOKEN\" -H 'Authorization: Bearer blahblahblah'\nauthorization: disabled\nBearer authentication is required\nAuthorization: Basic dXNlcm5hbWU6cGFzc3dvcmQ=",
            None,
        ),
        (
            "cli_password",
            "curl -u admin:Fake-Passw0rd! https://ci.example.com",
            Some("curl -u admin:[REDACTED:cli_password] https://ci.example.com"),
        ),
        (
            "cli_password",
            "mysql -h db -u root -pFakeRoot42 app",
            Some("mysql -h db -u root -p[REDACTED:cli_password] app"),
        ),
        (
            "cli_password",
            "sshpass -p 'FakeSsh#1' ssh ops@host",
            Some("sshpass -p '[REDACTED:cli_password]' ssh ops@host"),
        ),
        (
            "cli_password",
            "curl -u \"$USER:$PASS\" https://x\nmysql -u root -p app\ncurl -u elastic:changeme http://localhost:9200\ncurl -u me@example.com:api_token https://x.atlassian.net",
            None,
        ),
        (
            "registry_auth",
            "{\"auths\": {\"ghcr.io\": {\"auth\": \"ZmFrZXVzZXI6RmFrZURvY2tlclB3MQ==\"}}}",
            Some("{\"auths\": {\"ghcr.io\": {\"auth\": \"[REDACTED:registry_auth]\"}}}"),
        ),
        (
            "registry_auth",
            "_auth=ZmFrZXVzZXI6RmFrZU5wbVB3Mg==\n",
            Some("_auth=[REDACTED:registry_auth]\n"),
        ),
        (
            "registry_auth",
            "{\"auth\": \"oauth2\", \"auths\": {\"x\": {\"auth\": \"\"}}}",
            None,
        ),
        (
            "url_credential",
            "git clone https://FAKETb66Pt2McyvYkPI5gYXqJJWV7I3s4rW9NbCD@git.example.com/o/r.git",
            Some("git clone https://[REDACTED:url_credential]@git.example.com/o/r.git"),
        ),
        (
            "url_credential",
            "https://b.s3.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature=deadbeef93223a7fba9398a6003f3d5d32a6c9df8c2eb74b0ae19a01f6a6b445",
            Some(
                "https://b.s3.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature=[REDACTED:url_credential]",
            ),
        ),
        (
            "url_credential",
            "ssh://git@github.com/o/r.git https://deploy-bot-2024-account@registry.example.com/v2/ https://api.example.com/v1/token/refresh\nSENTRY_DSN=https://0123456789abcdef0123456789abcdef@o123456.ingest.sentry.io/1234567",
            None,
        ),
        (
            "netrc_password",
            "machine api.example.com login fake password FakeNetrc1\n",
            Some("machine api.example.com login fake password [REDACTED:netrc_password]\n"),
        ),
        (
            "netrc_password",
            "machine example.org\n  login fake\n  password \"FakeNetrc#2\"\n",
            Some("machine example.org\n  login fake\n  password \"[REDACTED:netrc_password]\"\n"),
        ),
        (
            "netrc_password",
            "On the build machine, open the login page and reset the password there.\nmachine h login u password $PASSWORD",
            None,
        ),
        (
            "xml_secret",
            "<server><password>FakeMvnPw9</password></server>",
            Some("<server><password>[REDACTED:xml_secret]</password></server>"),
        ),
        (
            "xml_secret",
            "<add key=\"DbPassword\" value=\"FakeDbPw77\" />",
            Some("<add key=\"DbPassword\" value=\"[REDACTED:xml_secret]\" />"),
        ),
        (
            "xml_secret",
            "<name>fs.s3a.secret.key</name>\n<value>FAKE7197DS/OHqJCoV2KwZW4Z9WqxNxFerL7f7au</value>",
            Some("<name>fs.s3a.secret.key</name>\n<value>[REDACTED:xml_secret]</value>"),
        ),
        (
            "xml_secret",
            "<password>${db.password}</password>\n<passwordPolicy>strict</passwordPolicy>\n<tokenTtl>3600</tokenTtl>",
            None,
        ),
        (
            "yaml_block_secret",
            "db:\n  password: |\n    FakeBlockPw-1\n  host: x\n",
            Some("db:\n  password: |\n    [REDACTED:yaml_block_secret]\n  host: x\n"),
        ),
        (
            "yaml_block_secret",
            "- token: >-\n    FAKEvqk8CbumSJxzK3e2yoG3XsjwfIYStAZnuaBX\n",
            Some("- token: >-\n    [REDACTED:yaml_block_secret]\n"),
        ),
        (
            "yaml_block_secret",
            "password: >\n  The password of the admin user.\ntoken: |\n  {{ .Values.token }}\n",
            None,
        ),
        (
            "dockerfile_secret",
            "FROM node:20\nENV NPM_TOKEN FAKEmcZ0ziZNSijq0gS9pyC9YzMXi7ym2PuNL1q6\n",
            Some("FROM node:20\nENV NPM_TOKEN [REDACTED:dockerfile_secret]\n"),
        ),
        (
            "dockerfile_secret",
            "ARG DB_PASSWORD \"FakeArgPw3\"\n",
            Some("ARG DB_PASSWORD \"[REDACTED:dockerfile_secret]\"\n"),
        ),
        (
            "dockerfile_secret",
            "ARG NPM_TOKEN\nENV PASSWORD_FILE /run/secrets/pw\nENV DB_PASSWORD $DB_PASSWORD\n",
            None,
        ),
        (
            "high_entropy_key",
            "production:\n  secret_key_base: deadbeefc65b3fd1eaf47de635663afe593f46807fbddf0a4d2f6d2e4d57a17ab9d9db3b6e07fe5a32fe8bbc9b3f436120444a100a86f4ad33d9f09ce6d2125a\n",
            Some("production:\n  secret_key_base: [REDACTED:high_entropy_key]\n"),
        ),
        (
            "high_entropy_key",
            "APP_KEY=base64:FAKEUo7HqtmDQOlMehhaxonRdN4QkK9OKWkYTDjapT4=\n",
            Some("APP_KEY=[REDACTED:high_entropy_key]\n"),
        ),
        (
            "high_entropy_key",
            "signingKey: \"FAKEMrlua9L3mJoVixnDqvCFtM_O7Ugu-MBKeyTg9wY=\"",
            Some("signingKey: \"[REDACTED:high_entropy_key]\""),
        ),
        (
            "high_entropy_key",
            "monkey = \"FAKEkhTNEm9iyOQShzOKoLzcNVfkxMxD\"\ncache_key = \"deadbeef9f15229ad3dca730e59bb893efc21686\"\npCur->nKey = sqlite3BtreePayloadSize(pCur);\npublic_key = \"FAKET5RJ5zt9qKMfrAGfK9rD8e2vZ4b6mcBASoEKMV1b\"",
            None,
        ),
        (
            "private_key",
            "Public-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIFAKEzRR4A1aBx+TEHpP5YUymQ2I0oqLpjQPF1PM\nPrivate-Lines: 1\nAAAAIFAKEAYIAkeC07KVLDHAbe/dCq698KSuV9KdUORjiUkh\nPrivate-MAC: deadbeefb17fa8083c9ff7d3f5e41f117f08f51c47e4b59010d58cff1a4ffd3f\n",
            Some(
                "Public-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIFAKEzRR4A1aBx+TEHpP5YUymQ2I0oqLpjQPF1PM\nPrivate-Lines: 1\n[REDACTED:private_key]\nPrivate-MAC: deadbeefb17fa8083c9ff7d3f5e41f117f08f51c47e4b59010d58cff1a4ffd3f\n",
            ),
        ),
        (
            "private_key",
            "    client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCkZBS0VGT0F0TE5pZHBocURZQmtxN2dRTDJEdzI4c0ZTNFJkMGhSQWdmRi90WXpWNTdKUlY1a3VGYlFBbGtlSGEKLS0tLS1FTkQgRUMgUFJJVkFURSBLRVktLS0tLQo=\n",
            Some("    client-key-data: [REDACTED:private_key]\n"),
        ),
        (
            "private_key",
            "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkZBS0VXeWNLOXFaSHRyYVhpU2lML01FUFh0T2h4cDVEa0lJeFN1a0h2MGVUQk1lYWl6ZjBFcjE5NSttSWdzTEYKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n",
            None,
        ),
        (
            "password_assignment",
            "db_password: str = \"FakeTypedPw1\"",
            Some("db_password: str = \"[REDACTED:password_assignment]\""),
        ),
        (
            "password_assignment",
            "static API_TOKEN: &str = \"FAKEDRqF70AQIM8VW3BiE1Nzh9tdEgRL\";",
            Some("static API_TOKEN: &str = \"[REDACTED:password_assignment]\";"),
        ),
        (
            "password_assignment",
            "SMTP_PASS=FakeSmtp3\n",
            Some("SMTP_PASS=[REDACTED:password_assignment]\n"),
        ),
        (
            "password_assignment",
            "ssh_passphrase: FakePhrase42\n",
            Some("ssh_passphrase: [REDACTED:password_assignment]\n"),
        ),
        (
            "password_assignment",
            "const STOP_REASON_MAX_TOKEN: &str = \"maxTokens\";\nconst SERVICE_ACCOUNT_PASSWORD: &str = \"TRUNCATE\";\nforce_pass: true/false\nrender_pass = \"shadowPass2\"\nBYPASS_CACHE=1",
            None,
        ),
        (
            "password_assignment",
            "password: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf\nsecret_arn: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf\npassword: vault:secret/data/db#pw\nsecret: \"[REDACTED]\"",
            None,
        ),
        (
            "password_assignment",
            "\"access_token\": \"access-1\", \"progressToken\": \"progress-test-1\"\nSTRIPE_SECRET_KEY=sk_test_FAKEEPBXFhjSfTCnqkaKFgKh\nhtoken : super::super::Foundation:: HANDLE,",
            None,
        ),
        (
            "password_assignment",
            "algolia: {\n  apiKey: \"deadbeef0123456789abcdef01234567\",\n  indexName: \"docs\",\n  appId: \"FAKE0APP0ID\",\n},",
            None,
        ),
        (
            "password_assignment",
            "stripe: {\n  apiKey: \"FakeKey0123456789abcdef\",\n},",
            Some("stripe: {\n  apiKey: \"[REDACTED:password_assignment]\",\n},"),
        ),
        (
            "github_token",
            "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            None,
        ),
        (
            "stripe_key",
            "STRIPE_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
            None,
        ),
        (
            "stripe_key",
            "endpoint_secret = \"whsec_FAKE9TFuDcL7n085BU8Wn1Ngyf9KTnjS\"",
            Some("endpoint_secret = \"[REDACTED:stripe_key]\""),
        ),
        (
            "jwt",
            "token = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c'",
            None,
        ),
        // code_credential
        (
            "code_credential",
            "var c = new NetworkCredential(\"user\", \"p@ss\");",
            Some("var c = new NetworkCredential(\"user\", \"[REDACTED:code_credential]\");"),
        ),
        (
            "code_credential",
            "define('DB_PASSWORD', 'FakeWpPw9');",
            Some("define('DB_PASSWORD', '[REDACTED:code_credential]');"),
        ),
        (
            "code_credential",
            "Connection c = DriverManager.getConnection(url, \"app\", \"FakeJdbc7\");",
            Some(
                "Connection c = DriverManager.getConnection(url, \"app\", \"[REDACTED:code_credential]\");",
            ),
        ),
        (
            "code_credential",
            "r = requests.get(url, auth=(\"api\", \"FakeTuple6\"))",
            Some("r = requests.get(url, auth=(\"api\", \"[REDACTED:code_credential]\"))"),
        ),
        (
            "code_credential",
            "auth := smtp.PlainAuth(\"\", \"me@example.com\", \"FakeSmtp8\", host)",
            Some(
                "auth := smtp.PlainAuth(\"\", \"me@example.com\", \"[REDACTED:code_credential]\", host)",
            ),
        ),
        (
            "code_credential",
            "install(Auth) { basicAuth(\"user\", \"FakeKtor3\") }",
            Some("install(Auth) { basicAuth(\"user\", \"[REDACTED:code_credential]\") }"),
        ),
        (
            "code_credential",
            "factory.setPassword(\"FakeSetter8\");",
            Some("factory.setPassword(\"[REDACTED:code_credential]\");"),
        ),
        (
            "code_credential",
            "builder.username(\"sa\").password(\"FakeBuild7\")",
            Some("builder.username(\"sa\").password(\"[REDACTED:code_credential]\")"),
        ),
        (
            "code_credential",
            "vault.getSecret(\"FakeName1\");\nfactory.setPassword(System.getenv(\"PW\"));\nsetToken(\"refresh_token\")",
            None,
        ),
        (
            "code_credential",
            ".basic_auth(&user, Some(pass))
oauth(\"client\", \"FakeNotPw1\")",
            None,
        ),
        (
            "code_credential",
            "new NetworkCredential(user, password);\ndefine('DB_PASSWORD', getenv('DB_PASSWORD'));\nlogin(\"admin\", \"password\")",
            None,
        ),
        // pgpass_password
        (
            "pgpass_password",
            "db.example.com:5432:app:appuser:FakePgPw1\n",
            Some("db.example.com:5432:app:appuser:[REDACTED:pgpass_password]\n"),
        ),
        (
            "pgpass_password",
            "*:*:*:postgres:Fake\\:Pg2",
            Some("*:*:*:postgres:[REDACTED:pgpass_password]"),
        ),
        (
            "pgpass_password",
            "hostname:port:database:username:password\n00:11:22:33:44:55\nroot:x:0:0:root:/root:/bin/bash\n",
            None,
        ),
        // registry_token
        (
            "registry_token",
            r#"{"gitlab-token": {"gitlab.example.com": "FAKEglab9Tok3n2xYzQ"}}"#,
            Some(r#"{"gitlab-token": {"gitlab.example.com": "[REDACTED:registry_token]"}}"#),
        ),
        (
            "registry_token",
            r#""bearer": { "repo.example.org": "FAKEbr8Zt3LmN0pRvW2xY5" }"#,
            Some(r#""bearer": { "repo.example.org": "[REDACTED:registry_token]" }"#),
        ),
        (
            "registry_token",
            r#"{"github-oauth": {"github.com": "<token>"}, "bearer": {"x.org": "${TOKEN}"}}"#,
            None,
        ),
        // rule set 3 additions to older kinds
        (
            "xml_secret",
            "<property name=\"db.password\" value=\"FakeDbPw1\"/>",
            Some("<property name=\"db.password\" value=\"[REDACTED:xml_secret]\"/>"),
        ),
        (
            "xml_secret",
            "<password>{FAKEjZ3Nn7cQ8rWm+Ue5HXd0tPq2sVb4=}</password>",
            Some("<password>[REDACTED:xml_secret]</password>"),
        ),
        (
            "xml_secret",
            "<property name=\"password.min.length\" value=\"12\"/>\n<password>{password}</password>",
            None,
        ),
        (
            "password_assignment",
            "- name: DB_PASSWORD\n  value: FakeK8sPw3",
            Some("- name: DB_PASSWORD\n  value: [REDACTED:password_assignment]"),
        ),
        (
            "password_assignment",
            "- name: DB_PASSWORD\n  value: \"\"\n- name: DB_HOST\n  value: FakeHost123",
            None,
        ),
        (
            "password_assignment",
            "DB_PASSWORD=\"correct horse battery staple\"",
            Some("DB_PASSWORD=\"[REDACTED:password_assignment]\""),
        ),
        (
            "password_assignment",
            "ERROR_PASSWORD=\"Invalid password, try again.\"\nDB_PASSWORD=\"change me\"",
            None,
        ),
        (
            "password_assignment",
            "web1 ansible_host=10.0.0.5 ansible_ssh_pass=FakeSsh9",
            Some("web1 ansible_host=10.0.0.5 ansible_ssh_pass=[REDACTED:password_assignment]"),
        ),
        (
            "password_assignment",
            "let first_pass = run(1);\nrender_pass=FakeNotPw9",
            None,
        ),
        (
            "high_entropy_key",
            "define('AUTH_KEY', 'FAKE|Xq>7c:+}2u#L!mWz9_d@R0p(yT^e]kV$3Ns&bH-6o J%4fGi8lQ*aZ1w');",
            Some("define('AUTH_KEY', '[REDACTED:high_entropy_key]');"),
        ),
        (
            "high_entropy_key",
            "define('AUTH_KEY', 'put your unique phrase here');",
            None,
        ),
        (
            "high_entropy_key",
            "$settings['hash_salt'] = 'FAKEq3Zx9Lm2Vb7Nc4Rt8Ws1Ye6Ud0Ki5Oj';",
            Some("$settings['hash_salt'] = '[REDACTED:high_entropy_key]';"),
        ),
        (
            "webhook_url",
            "https://x.webhook.office.com/webhookb2/a-b@c-d/IncomingWebhook/deadbeef0123456789abcdef01234567/e-f",
            Some(
                "https://x.webhook.office.com/webhookb2/a-b@c-d/IncomingWebhook/[REDACTED:webhook_url]/e-f",
            ),
        ),
        (
            "url_credential",
            "https://files.example.com/get?f=a.pdf&sig=deadbeef9f8e7d6c5b4a",
            Some("https://files.example.com/get?f=a.pdf&sig=[REDACTED:url_credential]"),
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
    fn every_rule_compiles() {
        // Rules compile on first use; each must compile, whether or not a test text reaches it.
        for rule in Masker::new().rules() {
            assert!(!rule.regex().as_str().is_empty(), "{}", rule.kind);
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
                        set.contains(regex_automata::PatternID::must(index)),
                        "{} matched {input:?} without its prefilter",
                        rule.kind
                    );
                }
            }
        }
    }
}
